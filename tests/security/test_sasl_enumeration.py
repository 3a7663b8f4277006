"""User enumeration through SASL (issue 22, item 4), attacked over the wire on a real broker process.

SCRAM: the first server message of an unknown user must look like a real user's (a stable salt, the
default iteration count) and its salt must not be computable without the data dir's secret. PLAIN:
an unknown user and a known user with a wrong password get the same answer (the same work is shown
in ``packages/broker/tests/auth/test_decoys.py``).
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2 import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1 import SaslHandshakeRequest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.fixtures import BrokerFactory
from onceflow.testing.broker.security import add_embedded_users
from onceflow.testing.broker.wire import WireClient

USERS = {"alice": "alice-secret"}


def _sasl_broker(broker_factory: BrokerFactory, data_dir: Path) -> EmbeddedBroker:
    add_embedded_users(data_dir, USERS)
    return broker_factory(data_dir, security_protocol="SASL_PLAINTEXT")


def _scram_first(broker: EmbeddedBroker, user: str, mechanism: str = "SCRAM-SHA-256") -> dict[str, str]:
    """The server-first message's attributes for ``user`` (r=, s=, i=)."""
    with WireClient(broker.bootstrap_servers) as client:
        assert client.request(SaslHandshakeRequest(mechanism=mechanism)).error_code is ErrorCode.none
        answer = client.request(SaslAuthenticateRequest(auth_bytes=f"n,,n={user},r=abcdef".encode()))
        assert answer.error_code is ErrorCode.none
    return dict(part.split("=", 1) for part in bytes(answer.auth_bytes).decode().split(","))


def _plain_answer(broker: EmbeddedBroker, user: str, password: str) -> tuple[ErrorCode, str | None]:
    with WireClient(broker.bootstrap_servers) as client:
        client.request(SaslHandshakeRequest(mechanism="PLAIN"))
        answer = client.request(SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode()))
    return answer.error_code, answer.error_message


def test_scram_salt_of_an_unknown_user_is_stable_and_not_computable(
    tmp_path: Path, broker_factory: BrokerFactory
) -> None:
    broker = _sasl_broker(broker_factory, tmp_path / "one")
    known, ghost = _scram_first(broker, "alice"), _scram_first(broker, "ghost")
    assert _scram_first(broker, "ghost")["s"] == ghost["s"]  # asking again tells nothing
    assert ghost["i"] == known["i"]
    assert len(base64.b64decode(ghost["s"])) == len(base64.b64decode(known["s"]))
    computable = hashlib.sha256(b"onceflow" + b"ghost").digest()[:16]
    assert base64.b64decode(ghost["s"]) != computable
    assert _scram_first(broker, "ghost", "SCRAM-SHA-512")["s"] != ghost["s"]
    # the salt comes from a secret of the data dir: another broker answers another salt, the same
    # broker after a restart the same one
    other = _sasl_broker(broker_factory, tmp_path / "two")
    assert _scram_first(other, "ghost")["s"] != ghost["s"]
    broker.stop()
    broker.start()
    assert _scram_first(broker, "ghost")["s"] == ghost["s"]
    secret = tmp_path / "one" / "sasl-secret"
    assert secret.stat().st_mode & 0o077 == 0


def test_plain_answers_an_unknown_user_as_a_wrong_password(tmp_path: Path, broker_factory: BrokerFactory) -> None:
    broker = _sasl_broker(broker_factory, tmp_path / "broker")
    wrong_password = _plain_answer(broker, "alice", "guess")
    unknown_user = _plain_answer(broker, "ghost", "guess")
    assert wrong_password[0] is ErrorCode.sasl_authentication_failed
    assert unknown_user == wrong_password
    assert _plain_answer(broker, "alice", USERS["alice"])[0] is ErrorCode.none
