"""Client channels to onceflow services."""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from onceflow.core.grpc.auth import bearer_token_interceptor
from onceflow.core.grpc.tls import channel_credentials
from onceflow.core.settings import TlsSettings

#: Channel options every onceflow client uses: fail fast on unreachable servers is left to deadlines,
#: but reconnect quickly after a restart (the services are restarted by tests and supervisors).
DEFAULT_CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1_000),
)


def open_channel(
    target: str,
    tls: TlsSettings | None = None,
    *,
    options: Sequence[tuple[str, str | int]] = (),
) -> grpc.Channel:
    """A channel to ``target`` (``host:port``): TLS when ``tls.ca`` is set (mTLS with ``tls.cert``/``key``),
    plaintext otherwise; every call carries the bearer token of ``tls.token_file`` when it is set.
    ``options`` are extra gRPC channel arguments."""
    merged: list[tuple[str, str | int]] = [*DEFAULT_CHANNEL_OPTIONS, *options]
    if tls is not None and tls.ca:
        channel = grpc.secure_channel(target, channel_credentials(tls), options=merged)
    else:
        channel = grpc.insecure_channel(target, options=merged)
    if tls is not None and tls.token_file:
        return grpc.intercept_channel(channel, bearer_token_interceptor(tls.token_file))
    return channel
