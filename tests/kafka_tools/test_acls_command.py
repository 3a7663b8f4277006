"""``kafka-acls`` (Kafka's AclCommand) against a secured broker, embedded and Apache Kafka alike: add,
list and remove literal and prefixed ACLs as a super user, the ACLs take effect for the principal they
name, and a principal without ALTER on the Cluster cannot manage them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onceflow.broker.embedded import BrokerProcess
from onceflow.testing.broker.clients import produce_acked
from onceflow.testing.broker.fixtures import ApacheKafkaFactory, BrokerFactory
from onceflow.testing.broker.kafka_tools import ACL_COMMAND, run_tool
from onceflow.testing.broker.security import KINDS, sasl_config, start_secured_broker

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
_ENTRY = re.compile(
    r"Current ACLs for resource `ResourcePattern\(resourceType=(\w+), name=([^,]+), patternType=(\w+)\)`:"
    r"(.*?)(?=Current ACLs|\Z)",
    re.S,
)
_ACE = re.compile(r"\(principal=([^,]+), host=([^,]+), operation=(\w+), permissionType=(\w+)\)")


def _command_config(tmp_path: Path, user: str) -> Path:
    path = tmp_path / f"{user}.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{USERS[user]}";\n'
    )
    return path


def _acls(broker: BrokerProcess, config: Path, *args: str) -> str:
    result = run_tool(
        ACL_COMMAND, "--bootstrap-server", broker.bootstrap_servers, "--command-config", str(config), *args
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _listed(output: str) -> set[tuple[str, ...]]:
    return {
        (rtype, name.strip(), ptype, *ace)
        for rtype, name, ptype, body in _ENTRY.findall(output)
        for ace in _ACE.findall(body)
    }


@pytest.mark.parametrize("kind", KINDS)
def test_kafka_acls_adds_lists_and_removes_literal_and_prefixed_acls(
    kind: str, tmp_path: Path, broker_factory: BrokerFactory, apache_kafka_factory: ApacheKafkaFactory
) -> None:
    broker = start_secured_broker(
        kind,
        tmp_path / "broker",
        users=USERS,
        super_users=["admin"],
        allow_everyone_if_no_acl_found=False,
        embedded_factory=broker_factory,
        apache_kafka_factory=apache_kafka_factory,
    )
    admin, alice = _command_config(tmp_path, "admin"), _command_config(tmp_path, "alice")
    _acls(broker, admin, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--operation", "Describe",
          "--topic", "orders")  # fmt: skip
    _acls(broker, admin, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "logs-",
          "--group", "readers-", "--resource-pattern-type", "prefixed")  # fmt: skip
    _acls(broker, admin, "--add", "--deny-principal", "User:alice", "--operation", "Write", "--topic", "orders-dlq")
    listed = _listed(_acls(broker, admin, "--list"))
    assert listed == {
        ("TOPIC", "orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"),
        ("TOPIC", "orders", "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW"),
        ("TOPIC", "logs-", "PREFIXED", "User:alice", "*", "READ", "ALLOW"),
        ("GROUP", "readers-", "PREFIXED", "User:alice", "*", "READ", "ALLOW"),
        ("TOPIC", "orders-dlq", "LITERAL", "User:alice", "*", "WRITE", "DENY"),
    }
    only_prefixed = _listed(_acls(broker, admin, "--list", "--topic", "logs-", "--resource-pattern-type", "prefixed"))
    assert only_prefixed == {("TOPIC", "logs-", "PREFIXED", "User:alice", "*", "READ", "ALLOW")}

    alice_config = sasl_config(broker.bootstrap_servers, "alice", USERS["alice"])
    admin_config = sasl_config(broker.bootstrap_servers, "admin", USERS["admin"])
    produce_acked(broker.bootstrap_servers, "orders", [b"created"], config=admin_config)
    assert len(produce_acked(broker.bootstrap_servers, "orders", [b"a"], config=alice_config)) == 1

    refused = run_tool(ACL_COMMAND, "--bootstrap-server", broker.bootstrap_servers, "--command-config", str(alice),
                       "--add", "--allow-principal", "User:alice", "--operation", "All", "--cluster")  # fmt: skip
    assert "ClusterAuthorizationException" in refused.stdout + refused.stderr, refused.stdout + refused.stderr

    _acls(broker, admin, "--remove", "--force", "--topic", "orders")
    assert _listed(_acls(broker, admin, "--list", "--topic", "orders")) == set()
    with pytest.raises(AssertionError, match="TOPIC_AUTHORIZATION_FAILED"):
        produce_acked(broker.bootstrap_servers, "orders", [b"b"], config={**alice_config, "message.timeout.ms": 10000})
    assert len(_listed(_acls(broker, admin, "--list"))) == 3
