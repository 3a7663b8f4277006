"""TLS and mutual TLS between a client and the participant server, with trustme certificates."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import trustme

from onceflow.contract.clients import ParticipantClient, RpcFailed
from onceflow.core.settings import GrpcServerSettings, TlsSettings
from onceflow.sinks.server import ParticipantSettings, SqliteOptions, SqliteSink
from onceflow.sinks.server.settings import StagingSettings
from onceflow.sinks.service import ParticipantServer


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A CA, a server certificate for localhost and a client certificate, as PEM files."""
    root = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    server = ca.issue_cert("localhost", "127.0.0.1")
    client = ca.issue_cert("onceflow-coordinator@example.test")
    other_ca = trustme.CA()
    paths = {
        "ca": root / "ca.pem",
        "server_cert": root / "server.pem",
        "server_key": root / "server.key",
        "client_cert": root / "client.pem",
        "client_key": root / "client.key",
        "other_ca": root / "other-ca.pem",
    }
    ca.cert_pem.write_to_path(str(paths["ca"]))
    server.cert_chain_pems[0].write_to_path(str(paths["server_cert"]))
    server.private_key_pem.write_to_path(str(paths["server_key"]))
    client.cert_chain_pems[0].write_to_path(str(paths["client_cert"]))
    client.private_key_pem.write_to_path(str(paths["client_key"]))
    other_ca.cert_pem.write_to_path(str(paths["other_ca"]))
    return {name: str(path) for name, path in paths.items()}


def _serve(tmp_path: Path, tls: TlsSettings) -> ParticipantServer:
    settings = ParticipantSettings(
        staging=StagingSettings(roots=[str(tmp_path)]),
        server=GrpcServerSettings(host="127.0.0.1", port=0, tls=tls),
        sinks=[SqliteSink(name="main", kind="sqlite", options=SqliteOptions(path=str(tmp_path / "main.db")))],
    )
    server = ParticipantServer(settings)
    server.start()
    return server


def _list(target: str, tls: TlsSettings | None) -> int:
    with ParticipantClient(target, tls, timeout_s=10) as client:
        return len(client.list_prepared_transactions())


@pytest.fixture
def tls_server(tmp_path: Path, pki: dict[str, str]) -> Iterator[ParticipantServer]:
    server = _serve(tmp_path, TlsSettings(cert=pki["server_cert"], key=pki["server_key"]))
    yield server
    server.stop(grace=0)


@pytest.fixture
def mtls_server(tmp_path: Path, pki: dict[str, str]) -> Iterator[ParticipantServer]:
    server = _serve(
        tmp_path,
        TlsSettings(cert=pki["server_cert"], key=pki["server_key"], ca=pki["ca"], require_client_auth=True),
    )
    yield server
    server.stop(grace=0)


def _fails(target: str, tls: TlsSettings | None) -> grpc.StatusCode:
    with pytest.raises(RpcFailed) as info:
        _list(target, tls)
    return info.value.code()


def test_tls_client_that_trusts_the_ca_connects(tls_server: ParticipantServer, pki: dict[str, str]) -> None:
    assert _list(f"localhost:{tls_server.port}", TlsSettings(ca=pki["ca"])) == 0


def test_tls_refuses_plaintext_and_untrusting_clients(tls_server: ParticipantServer, pki: dict[str, str]) -> None:
    target = f"localhost:{tls_server.port}"
    assert _fails(target, None) == grpc.StatusCode.UNAVAILABLE
    assert _fails(target, TlsSettings(ca=pki["other_ca"])) == grpc.StatusCode.UNAVAILABLE


def test_mtls_accepts_only_clients_with_a_certificate_from_the_ca(
    mtls_server: ParticipantServer, pki: dict[str, str]
) -> None:
    target = f"localhost:{mtls_server.port}"
    client = TlsSettings(ca=pki["ca"], cert=pki["client_cert"], key=pki["client_key"])
    assert _list(target, client) == 0
    assert _fails(target, TlsSettings(ca=pki["ca"])) == grpc.StatusCode.UNAVAILABLE
    assert _fails(target, None) == grpc.StatusCode.UNAVAILABLE
