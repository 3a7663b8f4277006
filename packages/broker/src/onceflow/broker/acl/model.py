"""Kafka's ACL model: resource patterns, access control entries, bindings and the filters that find them.

The codes are the protocol's (``org.apache.kafka.common.acl`` and ``.resource``), so a binding read
off a CreateAcls request is stored and answered exactly as Kafka's own tools sent it. The filter
semantics are Kafka's ``AclBindingFilter.matches``: ``ANY`` matches every value, a null name, principal
or host matches every one, and the ``MATCH`` pattern type matches every pattern that would apply to
the named resource (the literal name, the literal wildcard ``*`` and every prefix of the name).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final, TypeVar

WILDCARD: Final = "*"
"""A resource name or host that matches every one (literal pattern only for names)."""
WILDCARD_PRINCIPAL: Final = "User:*"
"""The principal of an ACL that applies to every user."""
CLUSTER_NAME: Final = "kafka-cluster"
"""The only name of the Cluster resource."""


class ResourceType(IntEnum):
    """Kafka's ``ResourceType`` codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    """Kafka's ``PatternType`` codes (MATCH and ANY exist only in filters)."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    """Kafka's ``AclOperation`` codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class PermissionType(IntEnum):
    """Kafka's ``AclPermissionType`` codes."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


E = TypeVar("E", bound=IntEnum)


def _enum(cls: type[E], code: int) -> E:
    """Kafka's ``fromCode``: an unknown code is UNKNOWN (code 0 in every one of these enums)."""
    try:
        return cls(code)
    except ValueError:
        return cls(0)


class InvalidAcl(ValueError):  # noqa: N818 - Kafka's InvalidRequestException for one binding or filter
    """A binding or filter that cannot be stored or applied; the message says which field."""


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    """What an ACL applies to: a resource type and a literal or prefixed name."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def applies_to(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this pattern covers the literal resource ``(resource_type, name)``."""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.name in (name, WILDCARD)
        return self.pattern_type == PatternType.PREFIXED and name.startswith(self.name)


@dataclass(frozen=True, slots=True, order=True)
class AccessControlEntry:
    """Who may (or may not) do what from where."""

    principal: str
    host: str
    operation: AclOperation
    permission: PermissionType


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry."""

    pattern: ResourcePattern
    entry: AccessControlEntry

    @classmethod
    def of(
        cls,
        *,
        resource_type: int,
        name: str,
        pattern_type: int,
        principal: str,
        host: str,
        operation: int,
        permission: int,
    ) -> AclBinding:
        """A binding from protocol codes (unknown codes become UNKNOWN, see :func:`check_new`)."""
        return cls(
            ResourcePattern(_enum(ResourceType, resource_type), name, _enum(PatternType, pattern_type)),
            AccessControlEntry(principal, host, _enum(AclOperation, operation), _enum(PermissionType, permission)),
        )

    def describe(self) -> str:
        """Kafka's way of printing a binding, for logs and errors."""
        pattern, entry = self.pattern, self.entry
        return (
            f"(pattern=ResourcePattern(resourceType={pattern.resource_type.name}, name={pattern.name}, "
            f"patternType={pattern.pattern_type.name}), entry=(principal={entry.principal}, host={entry.host}, "
            f"operation={entry.operation.name}, permissionType={entry.permission.name}))"
        )


def check_new(binding: AclBinding) -> None:
    """Kafka's validation of an ACL to create (``AclControlManager.validateNewAcl`` and the broker's
    Cluster-name rule); raises :class:`InvalidAcl` naming the field."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidAcl(f"Invalid resourceType {pattern.resource_type.name}")
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAcl(f"Invalid patternType {pattern.pattern_type.name}")
    if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidAcl(f"Invalid operation {entry.operation.name}")
    if entry.permission not in (PermissionType.ALLOW, PermissionType.DENY):
        raise InvalidAcl(f"Invalid permissionType {entry.permission.name}")
    if not pattern.name:
        raise InvalidAcl("Resource name should not be empty")
    if pattern.resource_type == ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    kind, colon, name = entry.principal.partition(":")
    if not colon or not kind or not name:
        raise InvalidAcl(
            f"Could not parse principal from `{entry.principal}` (no colon is present separating the principal "
            "type from the principal name)"
        )


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Kafka's ``AclBindingFilter``: what DescribeAcls and DeleteAcls select (see module docs)."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: PermissionType

    @classmethod
    def of(
        cls,
        *,
        resource_type: int,
        name: str | None,
        pattern_type: int,
        principal: str | None,
        host: str | None,
        operation: int,
        permission: int,
    ) -> AclBindingFilter:
        """A filter from protocol codes (unknown codes become UNKNOWN, refused by :meth:`check`)."""
        return cls(
            _enum(ResourceType, resource_type),
            name,
            _enum(PatternType, pattern_type),
            principal,
            host,
            _enum(AclOperation, operation),
            _enum(PermissionType, permission),
        )

    def check(self) -> None:
        """Kafka's ``validateFilter``: a filter with an UNKNOWN part is refused."""
        if self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN:
            raise InvalidAcl("Unknown patternFilter.")
        if self.operation == AclOperation.UNKNOWN or self.permission == PermissionType.UNKNOWN:
            raise InvalidAcl("Unknown entryFilter.")

    def matches(self, binding: AclBinding) -> bool:
        """Kafka's ``AclBindingFilter.matches`` (see module docs)."""
        return self._matches_pattern(binding.pattern) and self._matches_entry(binding.entry)

    def _matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type not in (ResourceType.ANY, pattern.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, pattern.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:  # MATCH
            return pattern.name in (self.name, WILDCARD)
        return self.name.startswith(pattern.name)

    def _matches_entry(self, entry: AccessControlEntry) -> bool:
        if self.principal is not None and self.principal != entry.principal:
            return False
        if self.host is not None and self.host != entry.host:
            return False
        if self.operation not in (AclOperation.ANY, entry.operation):
            return False
        return self.permission in (PermissionType.ANY, entry.permission)
