"""Shared gRPC plumbing: health and reflection, TLS and mTLS (trustme certificates), error mapping."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import trustme
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from onceflow.core.errors import InvalidConfig, OnceflowError, WriterFenced
from onceflow.core.grpc import build_server, open_channel, status_for, translate_errors
from onceflow.core.settings import GrpcServerSettings, TlsSettings

SERVICE = "onceflow.v1.TransactionCoordinator"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate, as PEM files."""
    directory = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("client.onceflow.test")
    other_ca = trustme.CA()
    stranger = other_ca.issue_cert("stranger.onceflow.test")
    files: dict[str, str] = {}

    def write(name: str, data: bytes) -> None:
        path = directory / name
        path.write_bytes(data)
        files[name] = str(path)

    write("ca", ca.cert_pem.bytes())
    write("server_key", server.private_key_pem.bytes())
    write("server_cert", b"".join(blob.bytes() for blob in server.cert_chain_pems))
    write("client_key", client.private_key_pem.bytes())
    write("client_cert", b"".join(blob.bytes() for blob in client.cert_chain_pems))
    write("stranger_key", stranger.private_key_pem.bytes())
    other = ca.issue_cert("other.onceflow.test")
    write("other_key", other.private_key_pem.bytes())
    write("other_cert", b"".join(blob.bytes() for blob in other.cert_chain_pems))
    write("stranger_cert", b"".join(blob.bytes() for blob in stranger.cert_chain_pems))
    return files


def _serve(tls: TlsSettings) -> Iterator[int]:
    server, port = build_server(GrpcServerSettings(host="127.0.0.1", port=0, tls=tls), service_names=[SERVICE])
    server.start()
    try:
        yield port
    finally:
        server.stop(0).wait(5)


def _check(channel: grpc.Channel, service: str = "") -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    return int(stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status)


def test_plaintext_server_has_health_and_reflection() -> None:
    for port in _serve(TlsSettings()):
        with open_channel(f"127.0.0.1:{port}") as channel:
            assert _check(channel) == health_pb2.HealthCheckResponse.SERVING
            assert _check(channel, SERVICE) == health_pb2.HealthCheckResponse.SERVING
            with pytest.raises(grpc.RpcError) as unknown:
                _check(channel, "no.such.Service")
            assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            request = reflection_pb2.ServerReflectionRequest(list_services="")
            answer = next(iter(stub.ServerReflectionInfo(iter([request]), timeout=5)))
            names = {service.name for service in answer.list_services_response.service}
            assert {SERVICE, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= names


def test_tls_server_verified_by_its_ca(pki: dict[str, str]) -> None:
    for port in _serve(TlsSettings(cert=pki["server_cert"], key=pki["server_key"])):
        for host in ("127.0.0.1", "localhost"):
            with open_channel(f"{host}:{port}", TlsSettings(ca=pki["ca"])) as channel:
                assert _check(channel) == health_pb2.HealthCheckResponse.SERVING
        with open_channel(f"127.0.0.1:{port}") as plaintext, pytest.raises(grpc.RpcError) as refused:
            _check(plaintext)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


def test_mtls_accepts_only_clients_with_a_certificate_from_the_ca(pki: dict[str, str]) -> None:
    tls = TlsSettings(cert=pki["server_cert"], key=pki["server_key"], ca=pki["ca"], require_client_auth=True)
    for port in _serve(tls):
        target = f"127.0.0.1:{port}"
        client = TlsSettings(ca=pki["ca"], cert=pki["client_cert"], key=pki["client_key"])
        with open_channel(target, client) as channel:
            assert _check(channel) == health_pb2.HealthCheckResponse.SERVING
        with open_channel(target, TlsSettings(ca=pki["ca"])) as no_cert, pytest.raises(grpc.RpcError) as rejected:
            _check(no_cert)
        assert rejected.value.code() == grpc.StatusCode.UNAVAILABLE
        stranger = TlsSettings(ca=pki["ca"], cert=pki["stranger_cert"], key=pki["stranger_key"])
        with open_channel(target, stranger) as channel, pytest.raises(grpc.RpcError):
            _check(channel)


def test_tls_misconfiguration_names_the_setting(pki: dict[str, str], tmp_path: Path) -> None:
    cases = [
        (TlsSettings(cert=pki["server_cert"]), "server.tls.key"),
        (TlsSettings(cert=pki["server_cert"], key=pki["server_key"], require_client_auth=True), "server.tls.ca"),
        (TlsSettings(require_client_auth=True), "server.tls.require_client_auth"),
        (TlsSettings(cert=str(tmp_path / "missing.pem"), key=pki["server_key"]), "server.tls.cert"),
    ]
    for tls, setting in cases:
        with pytest.raises(InvalidConfig) as error:
            build_server(GrpcServerSettings(port=0, tls=tls), service_names=[])
        assert error.value.setting == setting
    with pytest.raises(InvalidConfig) as client_error:
        open_channel("127.0.0.1:1", TlsSettings(ca=pki["ca"], cert=pki["client_cert"]))
    assert client_error.value.setting == "tls.key"


class _Gone(OnceflowError):  # noqa: N818
    pass


class _Servicer:
    @translate_errors({WriterFenced: grpc.StatusCode.FAILED_PRECONDITION, _Gone: grpc.StatusCode.NOT_FOUND})
    def call(self, request: Exception, context: grpc.ServicerContext) -> str:
        raise request


class _Aborted(Exception):  # noqa: N818
    pass


class _Context:
    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise _Aborted(code, details)


def test_domain_errors_become_status_codes() -> None:
    assert status_for(WriterFenced("job", 1, 2)) == grpc.StatusCode.FAILED_PRECONDITION
    assert status_for(InvalidConfig("x", "bad")) == grpc.StatusCode.INVALID_ARGUMENT
    assert status_for(ValueError("bug")) is None
    servicer = _Servicer()
    with pytest.raises(_Aborted) as aborted:
        servicer.call(WriterFenced("ipcount", 1, 2), _Context())
    assert aborted.value.args[0] == grpc.StatusCode.FAILED_PRECONDITION
    assert "another writer owns the job" in aborted.value.args[1]
    with pytest.raises(ValueError, match="a bug"):  # unmapped errors are not swallowed
        servicer.call(ValueError("a bug"), _Context())


def _echo_server(settings: GrpcServerSettings) -> tuple[grpc.Server, int]:
    """A server with one mutating method (``/test.Things/CreateThing``) and one read-only one."""
    server, port = build_server(settings, service_names=[])
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(lambda request, context: request)
        for name in ("CreateThing", "GetThing")
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Things", handlers),))
    server.start()
    return server, port


def _call(channel: grpc.Channel, method: str) -> grpc.StatusCode:
    try:
        channel.unary_unary(f"/test.Things/{method}")(b"x", timeout=5)
    except grpc.RpcError as exc:
        code: grpc.StatusCode = exc.code()
        return code
    return grpc.StatusCode.OK


def test_an_allowed_client_certificate_may_call_mutating_rpcs_without_a_token(pki: dict[str, str]) -> None:
    tls = TlsSettings(cert=pki["server_cert"], key=pki["server_key"], ca=pki["ca"], require_client_auth=True)
    settings = GrpcServerSettings.model_validate(
        {
            "host": "127.0.0.1",
            "port": 0,
            "tls": tls.model_dump(),
            "auth": {"allowed_identities": ["client.onceflow.test"]},
        }
    )
    server, port = _echo_server(settings)
    try:
        allowed = TlsSettings(ca=pki["ca"], cert=pki["client_cert"], key=pki["client_key"])
        with open_channel(f"127.0.0.1:{port}", allowed) as channel:
            assert _call(channel, "CreateThing") == grpc.StatusCode.OK
        other_client = trustme_client(pki)
        with open_channel(f"127.0.0.1:{port}", other_client) as channel:
            assert _call(channel, "GetThing") == grpc.StatusCode.OK
            assert _call(channel, "CreateThing") == grpc.StatusCode.PERMISSION_DENIED
    finally:
        server.stop(0).wait(5)


def trustme_client(pki: dict[str, str]) -> TlsSettings:
    """A client certificate of the same CA for another identity (``other.onceflow.test``)."""
    ca_dir = Path(pki["ca"]).parent
    return TlsSettings(ca=pki["ca"], cert=str(ca_dir / "other_cert"), key=str(ca_dir / "other_key"))


def test_a_token_file_that_cannot_be_read_is_a_config_error(tmp_path: Path) -> None:
    settings = GrpcServerSettings.model_validate({"port": 0, "auth": {"token_file": str(tmp_path / "missing")}})
    with pytest.raises(InvalidConfig, match=r"server\.auth\.token_file"):
        build_server(settings, service_names=[])
