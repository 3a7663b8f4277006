"""``Authorizer``: Kafka's ``StandardAuthorizer`` decision over the broker's ACLs, plus onceflow's
protected resources.

``authorize(principal, host, operation, resource)`` of a literal resource:
    1. A super user (``super_users``, Kafka's ``super.users``) may do anything.
    2. Every ACL whose pattern covers the resource (the literal name, the literal wildcard ``*``,
       every prefixed pattern the name starts with) makes the resource "have ACLs". Of those, the ones
       whose principal is the caller or ``User:*``, whose host is the caller's address or ``*``, and
       whose operation is the one asked or ALL apply. An ALLOW ACL also grants the operations it
       implies: READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS
       (a DENY ACL implies nothing).
    3. Any applicable DENY: denied. Otherwise any applicable ALLOW: allowed.
    4. Otherwise a resource that has ACLs is denied, and one without any gets the default:
       ``allow_everyone_if_no_acl_found`` (Kafka's ``allow.everyone.if.no.acl.found``), except that a
       protected resource (:class:`ProtectedResources`) is never open by default.

``authorize_by_resource_type`` is Kafka's ``Authorizer.authorizeByResourceType`` (what InitProducerId
without a transactional id uses: may the caller WRITE any topic at all?).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from onceflow.broker.acl.model import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from onceflow.broker.acl.store import AclStore
from onceflow.broker.topics import KAFKA_INTERNAL_TOPICS
from onceflow.core.topics import INTERNAL_TOPIC_PREFIX

_IMPLIES_DESCRIBE = frozenset(
    {AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
)
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})
_PROBE_NAME = "hardcode"
"""The name Kafka's ``authorizeByResourceType`` probes first (so super users pass whatever DENY ACLs say)."""


def is_internal_topic(name: str) -> bool:
    """Topics holding onceflow's or Kafka's own state: ``_onceflow_*``, ``__consumer_offsets``,
    ``__transaction_state``."""
    return name.startswith(INTERNAL_TOPIC_PREFIX) or name in KAFKA_INTERNAL_TOPICS


@dataclass(frozen=True, slots=True)
class ProtectedResources:
    """Resources that are never open to a non-super user just because no ACL names them: the Cluster
    (ACL management, broker configs, markers, cluster-wide topic creation), the internal topics, the
    transactional ids starting with one of ``transactional_id_prefixes`` and the groups starting with
    one of ``group_prefixes``. An explicit ACL still grants them."""

    transactional_id_prefixes: tuple[str, ...]
    group_prefixes: tuple[str, ...] = ()

    def __contains__(self, resource: tuple[ResourceType, str]) -> bool:
        resource_type, name = resource
        if resource_type == ResourceType.CLUSTER:
            return True
        if resource_type == ResourceType.TOPIC:
            return is_internal_topic(name)
        if resource_type == ResourceType.TRANSACTIONAL_ID:
            return name.startswith(self.transactional_id_prefixes)
        if resource_type == ResourceType.GROUP:
            return bool(self.group_prefixes) and name.startswith(self.group_prefixes)
        return False


def _applies(binding: AclBinding, operation: AclOperation, principals: frozenset[str], host: str) -> bool:
    """Whether an ACL on the resource applies to this caller and operation (step 2)."""
    entry = binding.entry
    if entry.principal not in principals or entry.host not in (WILDCARD, host):
        return False
    if entry.operation in (AclOperation.ALL, operation):
        return True
    if entry.permission != PermissionType.ALLOW:
        return False
    if operation == AclOperation.DESCRIBE:
        return entry.operation in _IMPLIES_DESCRIBE
    return operation == AclOperation.DESCRIBE_CONFIGS and entry.operation in _IMPLIES_DESCRIBE_CONFIGS


class Authorizer:
    """Allow or deny one operation of one principal on one resource (see module docs)."""

    def __init__(
        self,
        acls: AclStore,
        *,
        super_users: Iterable[str],
        allow_everyone_if_no_acl_found: bool,
        protected: ProtectedResources,
    ) -> None:
        self.acls = acls
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.protected = protected

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        """Whether ``principal`` connected from ``host`` may do ``operation`` on the literal resource."""
        # Step 1
        if principal in self.super_users:
            return True
        # Step 2
        principals = frozenset({principal, WILDCARD_PRINCIPAL})
        has_acls = allowed = False
        for binding in self.acls.of_type(resource_type):
            if not binding.pattern.applies_to(resource_type, name):
                continue
            has_acls = True
            if not _applies(binding, operation, principals, host):
                continue
            # Step 3
            if binding.entry.permission == PermissionType.DENY:
                return False
            allowed = True
        if allowed:
            return True
        # Step 4
        if has_acls:
            return False
        return self.allow_everyone_if_no_acl_found and (resource_type, name) not in self.protected

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Kafka's ``authorizeByResourceType``: allowed if some ALLOW ACL of the caller for
        ``operation`` (or ALL) on ``resource_type`` is not dominated by a DENY ACL (a literal deny of
        the same name, a prefixed deny of a prefix of it, or a wildcard deny)."""
        if self.authorize(principal, host, operation, resource_type, _PROBE_NAME):
            return True
        deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        wildcard_allow = False
        for binding in self.acls.of_type(resource_type):
            entry, pattern = binding.entry, binding.pattern
            if entry.host not in (WILDCARD, host) or entry.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if entry.operation not in (operation, AclOperation.ALL):
                continue
            if pattern.pattern_type not in deny:
                continue
            if entry.permission == PermissionType.DENY:
                if pattern.pattern_type == PatternType.LITERAL and pattern.name == WILDCARD:
                    return False
                deny[pattern.pattern_type].add(pattern.name)
            elif entry.permission == PermissionType.ALLOW:
                if pattern.pattern_type == PatternType.LITERAL and pattern.name == WILDCARD:
                    wildcard_allow = True
                    continue
                allow[pattern.pattern_type].add(pattern.name)
        if wildcard_allow:
            return True
        for pattern_type, names in allow.items():
            for name in names:
                if pattern_type == PatternType.LITERAL and name in deny[PatternType.LITERAL]:
                    continue
                if not any(name[:end] in deny[PatternType.PREFIXED] for end in range(1, len(name) + 1)):
                    return True
        return False
