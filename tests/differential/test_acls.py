"""ACL decisions of the embedded broker against Apache Kafka's ``StandardAuthorizer``: the same users,
the same ACLs (created through the Admin API), the same raw requests, the same answers.

Both brokers run SASL/PLAIN with an ACL authorizer, ``admin`` as super user and, unless a test says
otherwise, ``allow.everyone.if.no.acl.found=false``. Every test has its own principal and resource
names, so the tests of the module share the two brokers.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from onceflow.acls.admin import EVERY_ACL
from onceflow.broker.embedded import BrokerProcess
from onceflow.testing.broker.security import KINDS, BrokerProcesses, sasl_config, start_secured_broker
from onceflow.testing.broker.wire import WireClient

from . import acl_probes as probe

USERS = {name: f"{name}-secret" for name in ("admin", "alice", "bob", "carol", "dave", "erin", "frank")}
T = TypeVar("T")
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED


@dataclass
class Secured:
    """One secured broker of the pair."""

    kind: str
    broker: BrokerProcess

    def client(self, user: str) -> WireClient:
        client = WireClient(self.broker.bootstrap_servers, client_id=f"acl-{user}")
        client.login_plain(user, USERS[user])
        return client

    def admin(self) -> AdminClient:
        return AdminClient(sasl_config(self.broker.bootstrap_servers, "admin", USERS["admin"]))

    def topics(self, *names: str) -> None:
        """Create the topics (as the super user) and wait until the broker serves them."""
        admin = self.admin()
        for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
            future.result(30)
        deadline = time.monotonic() + 30
        while not set(names) <= set(admin.list_topics(timeout=10).topics):
            assert time.monotonic() < deadline, f"topics {names} never appeared"
            time.sleep(0.1)

    def grant(self, *bindings: AclBinding) -> None:
        """Create the ACLs and wait until the broker's authorizer has them (Apache Kafka applies the
        controller's records a moment after CreateAcls returns)."""
        admin = self.admin()
        for future in admin.create_acls(list(bindings)).values():
            future.result(30)
        deadline = time.monotonic() + 30
        while not {str(b) for b in bindings} <= {str(b) for b in admin.describe_acls(EVERY_ACL).result(30)}:
            assert time.monotonic() < deadline, "ACLs never became visible"
            time.sleep(0.1)


Pair = dict[str, Secured]


def _start_pair(tmp_path_factory: pytest.TempPathFactory, processes: BrokerProcesses, allow_everyone: bool) -> Pair:
    return {
        kind: Secured(
            kind,
            start_secured_broker(
                kind,
                tmp_path_factory.mktemp(f"acl-{kind}"),
                users=USERS,
                super_users=["admin"],
                allow_everyone_if_no_acl_found=allow_everyone,
                embedded_factory=processes.embedded,
                apache_kafka_factory=processes.apache_kafka,
            ),
        )
        for kind in KINDS
    }


def _pairs(tmp_path_factory: pytest.TempPathFactory, allow_everyone: bool) -> Iterator[Pair]:
    processes = BrokerProcesses()
    try:
        yield _start_pair(tmp_path_factory, processes, allow_everyone)
    finally:
        processes.stop()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """The pair with ``allow.everyone.if.no.acl.found=false``."""
    yield from _pairs(tmp_path_factory, allow_everyone=False)


def both(pair: Pair, observe: Callable[[Secured], T]) -> T:
    """Observe each broker; they must agree. Returns the (common) observation."""
    seen = {kind: observe(secured) for kind, secured in pair.items()}
    assert seen["embedded"] == seen["apache-kafka"], seen
    return seen["embedded"]


def _acl(
    rtype: ResourceType,
    name: str,
    user: str,
    op: AclOperation,
    perm: AclPermissionType = ALLOW,
    *,
    pattern: ResourcePatternType = LITERAL,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, f"User:{user}", "*", op, perm)


def _suffix() -> str:
    return uuid.uuid4().hex[:8]


def test_topic_acls_literal_prefixed_deny_and_implied_operations(pair: Pair) -> None:
    s = _suffix()
    lit, pre, denied, desc, cfg, other = (f"{n}-{s}" for n in ("lit", "pre-x", "deny", "desc", "cfg", "other"))
    topic = ResourceType.TOPIC
    acls = [
        _acl(topic, lit, "alice", AclOperation.WRITE),
        _acl(topic, f"pre-x-{s[:4]}", "alice", AclOperation.READ, pattern=PREFIXED),
        _acl(topic, denied, "alice", AclOperation.ALL),
        _acl(topic, denied, "alice", AclOperation.WRITE, DENY),
        _acl(topic, desc, "alice", AclOperation.DESCRIBE),
        _acl(topic, desc, "alice", AclOperation.READ, DENY),
        _acl(topic, cfg, "alice", AclOperation.ALTER_CONFIGS),
        _acl(topic, other, "bob", AclOperation.READ),
    ]
    for secured in pair.values():
        secured.topics(lit, pre, denied, desc, cfg, other)
        secured.grant(*acls)

    def decisions(secured: Secured) -> dict[str, dict[str, str]]:
        with secured.client("alice") as alice:
            return {name: probe.topic_decisions(alice, name) for name in (lit, pre, denied, desc, cfg, other)}

    seen = both(pair, decisions)
    assert seen[lit]["produce"] == "none" and seen[lit]["metadata"] == "none"
    assert seen[lit]["fetch"] == "topic_authorization_failed"
    assert seen[pre]["fetch"] == "none" and seen[pre]["produce"] == "topic_authorization_failed"
    assert seen[denied]["produce"] == "topic_authorization_failed" and seen[denied]["fetch"] == "none"
    assert seen[desc]["metadata"] == "none" and seen[desc]["fetch"] == "topic_authorization_failed"
    assert seen[cfg]["describe_configs"] == "none" and seen[cfg]["metadata"] == "topic_authorization_failed"
    assert set(seen[other].values()) == {"topic_authorization_failed"}

    def visible(secured: Secured) -> tuple[set[str], str]:
        with secured.client("alice") as alice:
            listed = probe.visible_topics(alice) & {lit, pre, denied, desc, cfg, other}
            return listed, probe.metadata_decision(alice, f"missing-{s}")

    listed, missing = both(pair, visible)
    assert listed == {lit, pre, denied, desc}
    assert missing == "topic_authorization_failed"


def test_group_acls(pair: Pair) -> None:
    s = _suffix()
    topic, read_group, describe_group, no_group = f"g-topic-{s}", f"readers-{s}", f"watchers-{s}", f"nobody-{s}"
    acls = [
        _acl(ResourceType.TOPIC, topic, "bob", AclOperation.READ),
        _acl(ResourceType.GROUP, "readers-", "bob", AclOperation.READ, pattern=PREFIXED),
        _acl(ResourceType.GROUP, describe_group, "bob", AclOperation.DESCRIBE),
    ]
    for secured in pair.values():
        secured.topics(topic)
        secured.grant(*acls)

    def decisions(secured: Secured) -> dict[str, Any]:
        with secured.client("bob") as bob:
            seen: dict[str, Any] = {
                g: probe.group_decisions(bob, g, topic) for g in (read_group, describe_group, no_group)
            }
            seen["delete"] = probe.delete_group(bob, read_group)
            seen["listed"] = probe.listed_groups(bob) & {read_group, describe_group, no_group}
            return seen

    seen = both(pair, decisions)
    assert set(seen[read_group].values()) == {"none"}
    assert seen[describe_group]["offset_commit"] == "group_authorization_failed"
    assert seen[describe_group]["offset_fetch"] == "none"
    assert seen[no_group]["find_coordinator"] == "group_authorization_failed"
    assert seen["delete"] == "group_authorization_failed"


def test_transactional_ids_and_idempotent_producers(pair: Pair) -> None:
    s = _suffix()
    txn, topic = f"tx-{s}", f"w-{s}"

    def decisions(secured: Secured) -> dict[str, str]:
        with secured.client("carol") as carol:
            return {
                "init_txn": probe.init_producer_id(carol, txn),
                "find_txn": probe.find_transaction_coordinator(carol, txn),
                "init_other_txn": probe.init_producer_id(carol, f"other-{s}"),
                "init_idempotent": probe.init_producer_id(carol, None),
            }

    assert both(pair, decisions) == {
        "init_txn": "transactional_id_authorization_failed",
        "find_txn": "transactional_id_authorization_failed",
        "init_other_txn": "transactional_id_authorization_failed",
        "init_idempotent": "cluster_authorization_failed",
    }
    for secured in pair.values():
        secured.grant(
            _acl(ResourceType.TRANSACTIONAL_ID, "tx-", "carol", AclOperation.WRITE, pattern=PREFIXED),
            _acl(ResourceType.TOPIC, topic, "carol", AclOperation.WRITE),
        )
    granted = both(pair, decisions)
    assert granted["init_txn"] == granted["find_txn"] == granted["init_idempotent"] == "none"
    assert granted["init_other_txn"] == "transactional_id_authorization_failed"
    # a prefixed DENY over the only topic carol may write takes idempotent writes away again
    for secured in pair.values():
        secured.grant(_acl(ResourceType.TOPIC, "w-", "carol", AclOperation.WRITE, DENY, pattern=PREFIXED))
    assert both(pair, decisions)["init_idempotent"] == "cluster_authorization_failed"


def test_topic_creation_deletion_and_acl_management(pair: Pair) -> None:
    s = _suffix()
    created, missing = f"c-{s}-made", f"c-{s}-missing"

    def step(action: Callable[[WireClient], str]) -> str:
        def observe(secured: Secured) -> str:
            with secured.client("erin") as erin:
                return action(erin)

        return both(pair, observe)

    def grant(*acls: AclBinding) -> None:
        for secured in pair.values():
            secured.grant(*acls)

    assert step(lambda c: probe.create_topic(c, created)) == "topic_authorization_failed"
    assert step(probe.describe_acls) == "cluster_authorization_failed"
    grant(_acl(ResourceType.TOPIC, f"c-{s}-", "erin", AclOperation.CREATE, pattern=PREFIXED))
    assert step(lambda c: probe.create_topic(c, created)) == "none"
    assert step(lambda c: probe.delete_topic(c, created)) == "topic_authorization_failed"
    grant(_acl(ResourceType.TOPIC, f"c-{s}-", "erin", AclOperation.DESCRIBE, pattern=PREFIXED))
    assert step(lambda c: probe.delete_topic(c, missing)) == "unknown_topic_or_partition"
    assert step(lambda c: probe.delete_topic(c, created)) == "topic_authorization_failed"
    grant(_acl(ResourceType.TOPIC, created, "erin", AclOperation.DELETE))
    assert step(lambda c: probe.delete_topic(c, created)) == "none"
    grant(_acl(ResourceType.BROKER, "kafka-cluster", "erin", AclOperation.ALTER))
    assert step(probe.describe_acls) == "none"


@pytest.fixture(scope="module")
def open_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """The pair with ``allow.everyone.if.no.acl.found=true``."""
    yield from _pairs(tmp_path_factory, allow_everyone=True)


def test_allow_everyone_if_no_acl_found(open_pair: Pair) -> None:
    s = _suffix()
    open_topic, guarded, internal = f"open-{s}", f"guarded-{s}", f"_onceflow_state-{s}"
    for secured in open_pair.values():
        secured.topics(open_topic, guarded, internal)
        secured.grant(_acl(ResourceType.TOPIC, guarded, "alice", AclOperation.ALL))

    def decisions(secured: Secured) -> dict[str, str]:
        with secured.client("frank") as frank:
            return {
                "open": probe.topic_decisions(frank, open_topic)["produce"],
                "guarded": probe.topic_decisions(frank, guarded)["produce"],
                "idempotent": probe.init_producer_id(frank, None),
            }

    assert both(open_pair, decisions) == {"open": "none", "guarded": "topic_authorization_failed", "idempotent": "none"}
    # onceflow's rule, stricter than Kafka's: an internal topic is never open by default
    with open_pair["embedded"].client("frank") as frank:
        assert probe.topic_decisions(frank, internal)["produce"] == "topic_authorization_failed"
    with open_pair["apache-kafka"].client("frank") as frank:
        assert probe.topic_decisions(frank, internal)["produce"] == "none"
