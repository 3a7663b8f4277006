"""SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), TLS and super.users, with real clients against a
broker child process: right credentials pass, wrong ones get SASL_AUTHENTICATION_FAILED, a client
that does not authenticate is refused, and only super users create and delete internal topics (the
default ACL authorizer of a SASL listener)."""

# Raw kio requests take plain strs/bytes where kio declares NewType wrappers.
# mypy: disable-error-code="arg-type"

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trustme
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError as AIOKafkaError
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12 import MetadataRequest
from kio.schema.sasl_authenticate.v2 import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1 import SaslHandshakeRequest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.fixtures import BrokerFactory
from onceflow.testing.broker.wire import WireClient

_REFUSED = (KafkaError._AUTHENTICATION, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._SSL)
USERS = {"PLAIN": ("alice", "alice-secret"), "SCRAM-SHA-256": ("bob", "bob-secret"), "SCRAM-SHA-512": ("carol", "c")}


def _add_user(data_dir: Path, mechanism: str, user: str, password: str) -> None:
    command = [sys.executable, "-m", "onceflow.broker", "users", "add", "--mechanism", mechanism]
    command += ["--user", user, "--password", password, "--data-dir", str(data_dir)]
    subprocess.run(command, check=True, capture_output=True)


@pytest.fixture
def sasl_broker(tmp_path: Path, broker_factory: BrokerFactory) -> EmbeddedBroker:
    data_dir = tmp_path / "broker"
    for mechanism, (user, password) in USERS.items():
        _add_user(data_dir, mechanism, user, password)
    _add_user(data_dir, "SCRAM-SHA-256", "admin", "admin-secret")
    return broker_factory(data_dir, security_protocol="SASL_PLAINTEXT", super_users=["User:admin"])


def _sasl_config(broker: EmbeddedBroker, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def _produce_one(config: dict[str, Any], topic: str) -> tuple[KafkaError | None, list[KafkaError]]:
    """Produce one record; returns its delivery error (None: acked) and the client's error events."""
    events: list[KafkaError] = []
    result: list[KafkaError | None] = []
    producer = Producer({**config, "message.timeout.ms": 5000, "error_cb": events.append})
    producer.produce(topic, value=b"v", on_delivery=lambda err, _msg: result.append(err))
    deadline = time.monotonic() + 10
    while not result and time.monotonic() < deadline:
        producer.poll(0.1)
        if any(e.code() in _REFUSED for e in events):
            break
    return (result[0] if result else KafkaError(KafkaError._MSG_TIMED_OUT)), events


@pytest.mark.parametrize("mechanism", list(USERS))
def test_right_credentials_produce_with_confluent_kafka(sasl_broker: EmbeddedBroker, mechanism: str) -> None:
    user, password = USERS[mechanism]
    error, _ = _produce_one(_sasl_config(sasl_broker, mechanism, user, password), "secured")
    assert error is None


@pytest.mark.parametrize("mechanism", list(USERS))
def test_wrong_password_is_refused_with_confluent_kafka(sasl_broker: EmbeddedBroker, mechanism: str) -> None:
    user, _ = USERS[mechanism]
    error, events = _produce_one(_sasl_config(sasl_broker, mechanism, user, "wrong"), "secured")
    assert error is not None
    assert any(e.code() == KafkaError._AUTHENTICATION for e in events), events
    assert "Authentication failed" in sasl_broker.log_path.read_text()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_aiokafka_authenticates_and_is_refused_with_a_wrong_password(
    sasl_broker: EmbeddedBroker, mechanism: str
) -> None:
    user, password = USERS[mechanism]

    async def produce(secret: str) -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=sasl_broker.bootstrap_servers,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_plain_username=user,
            sasl_plain_password=secret,
            request_timeout_ms=5000,
        )
        await producer.start()
        try:
            await producer.send_and_wait("secured", b"v")
        finally:
            await producer.stop()

    asyncio.run(produce(password))
    with pytest.raises((AIOKafkaError, OSError)):
        asyncio.run(produce("wrong"))


def test_wrong_password_gets_sasl_authentication_failed_then_the_connection_closes(
    sasl_broker: EmbeddedBroker,
) -> None:
    with WireClient(sasl_broker.bootstrap_servers) as client:
        assert client.request(SaslHandshakeRequest(mechanism="PLAIN")).error_code is ErrorCode.none
        response = client.request(SaslAuthenticateRequest(auth_bytes=b"\0alice\0wrong"))
        assert response.error_code is ErrorCode.sasl_authentication_failed
        assert client.is_closed_by_peer()


def test_an_unknown_mechanism_is_refused_with_the_enabled_list(sasl_broker: EmbeddedBroker) -> None:
    with WireClient(sasl_broker.bootstrap_servers) as client:
        response = client.request(SaslHandshakeRequest(mechanism="GSSAPI"))
        assert response.error_code is ErrorCode.unsupported_sasl_mechanism
        assert set(response.mechanisms) == set(USERS)


def test_a_client_that_does_not_authenticate_is_refused(sasl_broker: EmbeddedBroker) -> None:
    with WireClient(sasl_broker.bootstrap_servers) as client:
        client.send_frame(client.encode(MetadataRequest(topics=None, include_topic_authorized_operations=False)))
        assert client.is_closed_by_peer()
    error, _ = _produce_one({"bootstrap.servers": sasl_broker.bootstrap_servers}, "secured")
    assert error is not None


def test_only_super_users_create_and_delete_internal_topics(sasl_broker: EmbeddedBroker) -> None:
    alice = AdminClient(_sasl_config(sasl_broker, "PLAIN", *USERS["PLAIN"]))
    admin = AdminClient(_sasl_config(sasl_broker, "SCRAM-SHA-256", "admin", "admin-secret"))
    with pytest.raises(Exception, match="TOPIC_AUTHORIZATION_FAILED"):
        alice.create_topics([NewTopic("_onceflow_state", 1, 1)])["_onceflow_state"].result(15)
    admin.create_topics([NewTopic("_onceflow_state", 1, 1)])["_onceflow_state"].result(15)
    alice.create_topics([NewTopic("ordinary", 1, 1)])["ordinary"].result(15)
    with pytest.raises(Exception, match="TOPIC_AUTHORIZATION_FAILED"):
        alice.delete_topics(["_onceflow_state"])["_onceflow_state"].result(15)
    alice.delete_topics(["ordinary"])["ordinary"].result(15)
    admin.delete_topics(["_onceflow_state"])["_onceflow_state"].result(15)


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_tls_listener(tmp_path: Path, broker_factory: BrokerFactory, protocol: str) -> None:
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    cert, key, ca_file = tmp_path / "server.pem", tmp_path / "server.key", tmp_path / "ca.pem"
    server.cert_chain_pems[0].write_to_path(cert)
    server.private_key_pem.write_to_path(key)
    ca.cert_pem.write_to_path(ca_file)
    data_dir = tmp_path / "broker"
    _add_user(data_dir, "SCRAM-SHA-512", "carol", "c")
    broker = broker_factory(data_dir, security_protocol=protocol, ssl_certfile=str(cert), ssl_keyfile=str(key))
    config: dict[str, Any] = {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": protocol,
        "ssl.ca.location": str(ca_file),
    }
    if protocol == "SASL_SSL":
        config |= {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "carol", "sasl.password": "c"}
    error, _ = _produce_one(config, "tls")
    assert error is None
    plaintext_error, _ = _produce_one({"bootstrap.servers": broker.bootstrap_servers}, "tls")
    assert plaintext_error is not None
