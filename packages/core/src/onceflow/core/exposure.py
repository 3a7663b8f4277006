"""A service refuses to serve a network without authentication (docs/design.md, "Security": Defaults).

Services bind to 127.0.0.1 by default. A listener on any other address (``0.0.0.0`` in a container,
a host name, a public address) must authenticate its clients: a gRPC server with a bearer token
(``server.auth.token_file``) or client certificates (``server.tls.require_client_auth`` with
``server.auth.allowed_identities``); the embedded broker with SASL, or TLS with client certificates.
Otherwise the service does not start: :func:`refuse_unauthenticated` raises :class:`InvalidConfig`
naming the address setting and what turns authentication on, and the command exits 2 before the
service touches anything. ``ONCEFLOW_INSECURE=1`` lets it serve without authentication anyway (a
trusted network; logged as ``service.insecure_listener``).

Every service command checks the listeners its settings declare (:func:`listeners_of`, in
``run_service``); ``build_server`` checks its own again, so an in-process server is held to the
same rule. A settings section that opens a listener implements :class:`ListensOn`.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from pydantic import BaseModel

from onceflow.core.errors import InvalidConfig
from onceflow.core.logging import get_logger

#: The environment variable that allows serving a network without authentication.
INSECURE_ENV: Final = "ONCEFLOW_INSECURE"

_log = get_logger(__name__)


@dataclass(frozen=True)
class Listener:
    """An address a service accepts connections on: its setting, its host, whether clients must
    authenticate there, and the settings that make them (for the refusal's message)."""

    setting: str
    host: str
    authenticated: bool
    remedy: str


@runtime_checkable
class ListensOn(Protocol):
    """A settings section that opens listeners; ``prefix`` is its dotted place in the settings."""

    def listeners(self, prefix: str) -> list[Listener]: ...


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (``127.0.0.0/8``, ``::1``); not ``0.0.0.0``, ``""`` or a name."""
    bare = host.strip().strip("[]")
    if bare.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def insecure_allowed(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``ONCEFLOW_INSECURE=1`` is set (unset or ``0``: no; anything else is InvalidConfig)."""
    value = (os.environ if env is None else env).get(INSECURE_ENV, "").strip()
    if value in ("", "0"):
        return False
    if value == "1":
        return True
    raise InvalidConfig(INSECURE_ENV, f"must be 1 to serve without authentication (or unset), got {value!r}")


def refuse_unauthenticated(listeners: Iterable[Listener], env: Mapping[str, str] | None = None) -> None:
    """Raise :class:`InvalidConfig` for the first listener off loopback without authentication, unless
    ``ONCEFLOW_INSECURE=1`` (then each such listener is logged)."""
    for listener in listeners:
        if listener.authenticated or is_loopback(listener.host):
            continue
        if insecure_allowed(env):
            _log.warning(
                "service.insecure_listener", setting=listener.setting, host=listener.host, allowed_by=INSECURE_ENV
            )
            continue
        raise InvalidConfig(
            listener.setting,
            f"{listener.host or 'every interface'!r} is not a loopback address and its clients do not "
            f"authenticate: {listener.remedy}; or set {INSECURE_ENV}=1 to serve without authentication "
            "on a trusted network",
        )


def listeners_of(settings: BaseModel, prefix: str = "") -> list[Listener]:
    """Every listener ``settings`` declares: the sections (at any depth) that implement :class:`ListensOn`."""
    found = list(settings.listeners(prefix)) if isinstance(settings, ListensOn) else []
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        path = f"{prefix}.{name}" if prefix else name
        values = value if isinstance(value, list | tuple) else [value]
        for i, item in enumerate(values):
            if isinstance(item, BaseModel):
                found += listeners_of(item, path if values is not value else f"{path}[{i}]")
    return found
