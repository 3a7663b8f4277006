"""The authorizer's decisions, Kafka's StandardAuthorizer rules one by one, over a real ACL store on
disk (the wire-level and Apache Kafka differential checks are in ``test_acl_api.py`` and
``tests/differential/test_acls.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onceflow.broker.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclStore,
    Authorizer,
    InvalidAcl,
    PatternType,
    PermissionType,
    ProtectedResources,
    ResourceType,
    check_new,
)

Op = AclOperation
Res = ResourceType
HOST = "127.0.0.1"
PROTECTED = ProtectedResources(
    transactional_id_prefixes=("onceflow-coordinator", "onceflow-sink-", "onceflow-src-"),
    group_prefixes=("onceflow-coordinator",),
)


def acl(
    resource: Res,
    name: str,
    operation: Op,
    *,
    principal: str = "User:alice",
    permission: PermissionType = PermissionType.ALLOW,
    pattern: PatternType = PatternType.LITERAL,
    host: str = "*",
) -> AclBinding:
    return AclBinding.of(
        resource_type=resource,
        name=name,
        pattern_type=pattern,
        principal=principal,
        host=host,
        operation=operation,
        permission=permission,
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[AclStore]:
    opened = AclStore.open(tmp_path / "acls")
    yield opened
    opened.close()


def authorizer(store: AclStore, *, allow_everyone: bool = False, super_users: tuple[str, ...] = ()) -> Authorizer:
    return Authorizer(
        store, super_users=super_users, allow_everyone_if_no_acl_found=allow_everyone, protected=PROTECTED
    )


def test_a_literal_allow_grants_its_principal_and_no_one_else(store: AclStore) -> None:
    store.add([acl(Res.TOPIC, "orders", Op.WRITE)])
    auth = authorizer(store, allow_everyone=True)
    assert auth.authorize("User:alice", HOST, Op.WRITE, Res.TOPIC, "orders")
    assert not auth.authorize("User:alice", HOST, Op.READ, Res.TOPIC, "orders")
    # the topic has ACLs, so allow.everyone.if.no.acl.found does not apply to bob
    assert not auth.authorize("User:bob", HOST, Op.WRITE, Res.TOPIC, "orders")
    assert auth.authorize("User:bob", HOST, Op.WRITE, Res.TOPIC, "other")


def test_deny_wins_over_allow_and_super_users_pass_anyway(store: AclStore) -> None:
    store.add(
        [
            acl(Res.TOPIC, "orders", Op.ALL),
            acl(Res.TOPIC, "ord", Op.WRITE, permission=PermissionType.DENY, pattern=PatternType.PREFIXED),
        ]
    )
    auth = authorizer(store, super_users=("User:alice",))
    assert auth.authorize("User:alice", HOST, Op.WRITE, Res.TOPIC, "orders")
    plain = authorizer(store)
    assert not plain.authorize("User:alice", HOST, Op.WRITE, Res.TOPIC, "orders")
    assert plain.authorize("User:alice", HOST, Op.READ, Res.TOPIC, "orders")


def test_allow_acls_imply_describe_and_describe_configs_but_deny_acls_imply_nothing(store: AclStore) -> None:
    store.add(
        [
            acl(Res.TOPIC, "t", Op.READ),
            acl(Res.TOPIC, "c", Op.ALTER_CONFIGS),
            acl(Res.TOPIC, "d", Op.DESCRIBE),
            acl(Res.TOPIC, "d", Op.READ, permission=PermissionType.DENY),
        ]
    )
    auth = authorizer(store)
    assert auth.authorize("User:alice", HOST, Op.DESCRIBE, Res.TOPIC, "t")
    assert not auth.authorize("User:alice", HOST, Op.DESCRIBE_CONFIGS, Res.TOPIC, "t")
    assert auth.authorize("User:alice", HOST, Op.DESCRIBE_CONFIGS, Res.TOPIC, "c")
    assert not auth.authorize("User:alice", HOST, Op.DESCRIBE, Res.TOPIC, "c")
    assert auth.authorize("User:alice", HOST, Op.DESCRIBE, Res.TOPIC, "d")
    assert not auth.authorize("User:alice", HOST, Op.READ, Res.TOPIC, "d")


def test_prefixed_wildcard_principal_and_host_rules(store: AclStore) -> None:
    store.add(
        [
            acl(Res.GROUP, "app-", Op.READ, pattern=PatternType.PREFIXED, principal="User:*"),
            acl(Res.TOPIC, "*", Op.DESCRIBE, host="10.0.0.1"),
            acl(Res.TOPIC, "logs", Op.READ),
        ]
    )
    auth = authorizer(store, allow_everyone=True)
    assert auth.authorize("User:carol", HOST, Op.READ, Res.GROUP, "app-1")
    assert not auth.authorize("User:carol", HOST, Op.DELETE, Res.GROUP, "app-1")
    # "ap" is not covered by the prefix "app-": it has no ACLs, and the default (allow) applies
    assert auth.authorize("User:carol", HOST, Op.DELETE, Res.GROUP, "ap")
    assert not authorizer(store).authorize("User:carol", HOST, Op.DELETE, Res.GROUP, "ap")
    # the literal wildcard gives every topic ACLs: only alice from 10.0.0.1 may describe
    assert auth.authorize("User:alice", "10.0.0.1", Op.DESCRIBE, Res.TOPIC, "anything")
    assert not auth.authorize("User:alice", HOST, Op.DESCRIBE, Res.TOPIC, "anything")
    # a literal name is not a prefix: "logs" does not cover "logs2" (only the wildcard does)
    assert not auth.authorize("User:alice", HOST, Op.READ, Res.TOPIC, "logs2")
    assert auth.authorize("User:alice", HOST, Op.READ, Res.TOPIC, "logs")


def test_protected_resources_are_never_open_by_default(store: AclStore) -> None:
    auth = authorizer(store, allow_everyone=True, super_users=("User:admin",))
    for resource, name in [
        (Res.TOPIC, "_onceflow_coordinator_log"),
        (Res.TOPIC, "__consumer_offsets"),
        (Res.TRANSACTIONAL_ID, "onceflow-coordinator"),
        (Res.TRANSACTIONAL_ID, "onceflow-sink-kafka-job"),
        (Res.TRANSACTIONAL_ID, "onceflow-src-generator-0"),
        (Res.GROUP, "onceflow-coordinator"),
        (Res.CLUSTER, "kafka-cluster"),
    ]:
        assert not auth.authorize("User:mallory", HOST, Op.WRITE, resource, name), name
        assert auth.authorize("User:admin", HOST, Op.WRITE, resource, name), name
    assert auth.authorize("User:mallory", HOST, Op.WRITE, Res.TOPIC, "ip_count_source")
    assert auth.authorize("User:mallory", HOST, Op.WRITE, Res.TRANSACTIONAL_ID, "my-app")
    assert auth.authorize("User:mallory", HOST, Op.READ, Res.GROUP, "my-app")
    store.add([acl(Res.TOPIC, "_onceflow_", Op.WRITE, principal="User:svc", pattern=PatternType.PREFIXED)])
    assert auth.authorize("User:svc", HOST, Op.WRITE, Res.TOPIC, "_onceflow_coordinator_log")


def test_authorize_by_resource_type_is_kafkas(store: AclStore) -> None:
    auth = authorizer(store)
    assert not auth.authorize_by_resource_type("User:alice", HOST, Op.WRITE, Res.TOPIC)
    store.add([acl(Res.TOPIC, "orders", Op.WRITE)])
    assert auth.authorize_by_resource_type("User:alice", HOST, Op.WRITE, Res.TOPIC)
    store.add([acl(Res.TOPIC, "or", Op.WRITE, pattern=PatternType.PREFIXED, permission=PermissionType.DENY)])
    assert not auth.authorize_by_resource_type("User:alice", HOST, Op.WRITE, Res.TOPIC)
    store.add([acl(Res.TOPIC, "*", Op.ALL)])
    assert auth.authorize_by_resource_type("User:alice", HOST, Op.WRITE, Res.TOPIC)
    store.add([acl(Res.TOPIC, "*", Op.WRITE, permission=PermissionType.DENY)])
    assert not auth.authorize_by_resource_type("User:alice", HOST, Op.WRITE, Res.TOPIC)


def test_authorize_by_resource_type_passes_everyone_when_no_acl_is_found(store: AclStore) -> None:
    assert authorizer(store, allow_everyone=True).authorize_by_resource_type("User:bob", HOST, Op.WRITE, Res.TOPIC)
    store.add([acl(Res.TOPIC, "hardcode", Op.READ)])  # the name Kafka probes now has ACLs
    assert not authorizer(store, allow_everyone=True).authorize_by_resource_type("User:bob", HOST, Op.WRITE, Res.TOPIC)


def test_acls_survive_a_reopen_and_deletions_too(tmp_path: Path) -> None:
    kept, dropped = acl(Res.TOPIC, "a", Op.READ), acl(Res.GROUP, "g", Op.READ, pattern=PatternType.PREFIXED)
    store = AclStore.open(tmp_path)
    store.add([kept, dropped, kept])
    store.remove([dropped])
    store.close()
    again = AclStore.open(tmp_path)
    try:
        assert again.matching(AclBindingFilter.of(**_ANY)) == [kept]
    finally:
        again.close()


_ANY: dict[str, Any] = {
    "resource_type": Res.ANY,
    "name": None,
    "pattern_type": PatternType.ANY,
    "principal": None,
    "host": None,
    "operation": Op.ANY,
    "permission": PermissionType.ANY,
}


def test_filters_match_as_kafkas_acl_binding_filter(store: AclStore) -> None:
    literal, wildcard = acl(Res.TOPIC, "orders", Op.READ), acl(Res.TOPIC, "*", Op.READ)
    prefix, other = acl(Res.TOPIC, "ord", Op.READ, pattern=PatternType.PREFIXED), acl(Res.TOPIC, "x", Op.READ)
    store.add([literal, wildcard, prefix, other])

    def found(**changes: Any) -> set[AclBinding]:
        return set(store.matching(AclBindingFilter.of(**{**_ANY, **changes})))

    assert found(name="orders", pattern_type=PatternType.MATCH) == {literal, wildcard, prefix}
    assert found(name="orders", pattern_type=PatternType.ANY) == {literal}
    assert found(name="ord", pattern_type=PatternType.PREFIXED) == {prefix}
    assert found(pattern_type=PatternType.LITERAL) == {literal, wildcard, other}
    assert found(principal="User:bob") == set()
    assert found() == {literal, wildcard, prefix, other}


@pytest.mark.parametrize(
    ("binding", "message"),
    [
        (acl(Res.ANY, "t", Op.READ), "resourceType"),
        (acl(Res.TOPIC, "t", Op.READ, pattern=PatternType.MATCH), "patternType"),
        (acl(Res.TOPIC, "t", Op.ANY), "operation"),
        (acl(Res.TOPIC, "t", Op.READ, permission=PermissionType.ANY), "permissionType"),
        (acl(Res.TOPIC, "", Op.READ), "empty"),
        (acl(Res.CLUSTER, "other", Op.ALTER), "kafka-cluster"),
        (acl(Res.TOPIC, "t", Op.READ, principal="alice"), "principal"),
    ],
)
def test_invalid_bindings_are_refused_naming_the_field(binding: AclBinding, message: str) -> None:
    with pytest.raises(InvalidAcl, match=message):
        check_new(binding)
