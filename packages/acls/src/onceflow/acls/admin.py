"""``AclAdmin``: create ACLs and read them back through the Admin API (confluent-kafka's AdminClient,
CreateAcls and DescribeAcls), the same on Apache Kafka and the embedded broker."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from onceflow.acls.plan import Grant

Wanted = Sequence[tuple[str, Grant]]

EVERY_ACL = AclBindingFilter(  # None matches every name, principal and host (the stubs say str)
    ResourceType.ANY,
    None,  # type: ignore[arg-type]
    ResourcePatternType.ANY,
    None,  # type: ignore[arg-type]
    None,  # type: ignore[arg-type]
    AclOperation.ANY,
    AclPermissionType.ANY,
)
"""The filter DescribeAcls answers every ACL for."""


def acl_binding(principal: str, grant: Grant) -> AclBinding:
    """The Admin API's binding of one grant (the protocol codes are Kafka's in both models)."""
    return AclBinding(
        ResourceType(int(grant.resource_type)),
        grant.name,
        ResourcePatternType(int(grant.pattern_type)),
        principal,
        "*",
        AclOperation(int(grant.operation)),
        AclPermissionType.ALLOW,
    )


class AclAdmin:
    """ACL changes through one admin login (``config``: librdkafka properties)."""

    def __init__(self, config: Mapping[str, Any], *, timeout: float) -> None:
        self._admin = AdminClient(dict(config))
        self._timeout = timeout

    def create(self, wanted: Wanted) -> dict[tuple[str, Grant], str]:
        """Create every ACL (existing ones are kept); the refused ones with the broker's reason."""
        if not wanted:
            return {}
        # Two services of one principal may need the same ACL: the Admin API takes each binding once.
        by_binding: dict[str, list[tuple[str, Grant]]] = {}
        unique: dict[str, AclBinding] = {}
        for principal, grant in wanted:
            binding = acl_binding(principal, grant)
            by_binding.setdefault(str(binding), []).append((principal, grant))
            unique.setdefault(str(binding), binding)
        futures = self._admin.create_acls(list(unique.values()), request_timeout=self._timeout)
        failed: dict[tuple[str, Grant], str] = {}
        for binding, future in futures.items():
            try:
                future.result(self._timeout)
            except KafkaException as exc:
                for refused in by_binding[str(binding)]:
                    failed[refused] = str(exc.args[0].str() if exc.args else exc)
        return failed

    def missing(self, wanted: Wanted, *, settle_s: float = 10.0) -> list[tuple[str, Grant]]:
        """The wanted ACLs the broker does not list (waiting up to ``settle_s`` for a KRaft broker to
        apply what its controller committed)."""
        deadline = time.monotonic() + settle_s
        while True:
            listed = {str(b) for b in self._admin.describe_acls(EVERY_ACL, request_timeout=self._timeout).result()}
            absent = [(p, g) for p, g in wanted if str(acl_binding(p, g)) not in listed]
            if not absent or time.monotonic() >= deadline:
                return absent
            time.sleep(0.2)
