"""Off loopback, a listener must authenticate its clients (onceflow.core.exposure); the attack on the
service images is tests/security/test_insecure_start.py."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from onceflow.core.errors import InvalidConfig
from onceflow.core.exposure import INSECURE_ENV, is_loopback, listeners_of, refuse_unauthenticated
from onceflow.core.grpc import build_server
from onceflow.core.settings import GrpcServerSettings


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("[::1]", True), ("localhost", True),
     ("0.0.0.0", False), ("::", False), ("", False), ("10.0.0.5", False), ("coordinator", False)],
)  # fmt: skip
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


class Nested(BaseModel):
    server: GrpcServerSettings = GrpcServerSettings()
    replicas: list[GrpcServerSettings] = []


def test_every_server_in_the_settings_is_checked_with_its_setting_name() -> None:
    settings = Nested(replicas=[GrpcServerSettings(), GrpcServerSettings(host="0.0.0.0")])
    assert [listener.setting for listener in listeners_of(settings)] == [
        "server.host", "replicas[0].host", "replicas[1].host",
    ]  # fmt: skip
    with pytest.raises(InvalidConfig) as refused:
        refuse_unauthenticated(listeners_of(settings), env={})
    assert refused.value.setting == "replicas[1].host"
    assert "replicas[1].auth.token_file" in str(refused.value)


@pytest.mark.parametrize(
    "server",
    [{"auth": {"token_file": "/run/token"}}, {"auth": {"allowed_identities": ["driver"]},
     "tls": {"cert": "c", "key": "k", "ca": "a", "require_client_auth": True}}],
)  # fmt: skip
def test_a_token_or_client_certificates_authenticate(server: dict[str, object]) -> None:
    settings = GrpcServerSettings.model_validate({"host": "0.0.0.0", **server})
    refuse_unauthenticated(settings.listeners("server"), env={})


def test_build_server_refuses_before_it_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(INSECURE_ENV, raising=False)
    with pytest.raises(InvalidConfig, match=r"invalid setting 'server\.host'"):
        build_server(GrpcServerSettings(host="0.0.0.0"), service_names=[])
