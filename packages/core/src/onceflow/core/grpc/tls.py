"""gRPC credentials from :class:`TlsSettings` (PEM files on disk).

Guarantees: a server with ``cert``/``key`` serves TLS; with ``require_client_auth`` it accepts only
clients whose certificate chains to ``ca`` (mTLS). A client with ``ca`` verifies the server against it
and presents ``cert``/``key`` when both are set. Missing or half-configured files are
:class:`InvalidConfig` errors naming the setting.
"""

from __future__ import annotations

from pathlib import Path

import grpc

from onceflow.core.errors import InvalidConfig
from onceflow.core.settings import TlsSettings


def _read(path: str, setting: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InvalidConfig(setting, f"cannot read {path}: {exc.strerror or exc}") from None


def server_credentials(tls: TlsSettings, *, prefix: str = "server.tls") -> grpc.ServerCredentials | None:
    """Server credentials, or None for plaintext (no cert configured)."""
    if not tls.cert and not tls.key:
        if tls.require_client_auth:
            raise InvalidConfig(f"{prefix}.require_client_auth", "needs cert, key and ca")
        return None
    if not tls.cert or not tls.key:
        missing = "cert" if not tls.cert else "key"
        raise InvalidConfig(f"{prefix}.{missing}", "TLS needs both cert and key")
    if tls.require_client_auth and not tls.ca:
        raise InvalidConfig(f"{prefix}.ca", "is required when require_client_auth is true (mTLS)")
    key = _read(tls.key, f"{prefix}.key")
    cert = _read(tls.cert, f"{prefix}.cert")
    root = _read(tls.ca, f"{prefix}.ca") if tls.ca else None
    return grpc.ssl_server_credentials(
        [(key, cert)], root_certificates=root, require_client_auth=tls.require_client_auth
    )


def channel_credentials(tls: TlsSettings, *, prefix: str = "tls") -> grpc.ChannelCredentials:
    """Client credentials: verify the server against ``ca``; present ``cert``/``key`` if both are set."""
    if not tls.ca:
        raise InvalidConfig(f"{prefix}.ca", "a secure channel needs the CA that signed the server certificate")
    if bool(tls.cert) != bool(tls.key):
        missing = "cert" if not tls.cert else "key"
        raise InvalidConfig(f"{prefix}.{missing}", "a client certificate needs both cert and key")
    root = _read(tls.ca, f"{prefix}.ca")
    key = _read(tls.key, f"{prefix}.key") if tls.key else None
    cert = _read(tls.cert, f"{prefix}.cert") if tls.cert else None
    return grpc.ssl_channel_credentials(root_certificates=root, private_key=key, certificate_chain=cert)
