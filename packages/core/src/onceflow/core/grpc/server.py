"""A gRPC server with the pieces every onceflow service has: TLS, health and reflection."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from onceflow.core.errors import InvalidConfig
from onceflow.core.exposure import refuse_unauthenticated
from onceflow.core.grpc.auth import AuthorizationInterceptor, read_token
from onceflow.core.grpc.limits import StreamLimits, StreamLimitsInterceptor, stream_budget
from onceflow.core.grpc.tls import server_credentials
from onceflow.core.settings import GrpcServerSettings

HEALTH_SERVICE_NAME = "grpc.health.v1.Health"
#: Largest request message a onceflow server accepts (gRPC's default, made explicit): a bigger one
#: is refused with RESOURCE_EXHAUSTED before any servicer sees it. Each service bounds its fields
#: further (ids, lists, URIs) and answers INVALID_ARGUMENT naming the limit.
MAX_REQUEST_BYTES = 4 * 1024 * 1024


def build_server(
    settings: GrpcServerSettings,
    *,
    service_names: Sequence[str],
    max_workers: int = 16,
    health_servicer: health.HealthServicer | None = None,
) -> tuple[grpc.Server, int]:
    """Create a server bound to ``settings.host:port`` and return it (not started) with its bound port.

    Steps:
        0. Off loopback, refuse to serve without authentication (:mod:`onceflow.core.exposure`;
           ``ONCEFLOW_INSECURE=1`` allows it).
        1. Create the server on a thread pool of ``max_workers``, taking requests of at most
           :data:`MAX_REQUEST_BYTES`; with ``settings.auth``, the mutating RPCs need a token or an
           allowed client identity (:mod:`onceflow.core.grpc.auth`); streaming calls are bounded per
           client and in total by ``settings.limits``, below ``max_workers`` so that threads stay
           for the other calls (:mod:`onceflow.core.grpc.limits`).
        2. Register gRPC health, SERVING for every name in ``service_names`` and for ``""`` (the
           whole server). Pass ``health_servicer`` to flip statuses later (e.g. NOT_SERVING on stop).
        3. Register reflection for ``service_names``, health and reflection itself.
        4. Bind: TLS when ``settings.tls`` has a cert and key, mTLS when it also requires client auth;
           port 0 picks a free port. A port that cannot be bound is an :class:`InvalidConfig`.

    The caller adds its servicers, then calls ``server.start()``.
    """
    # Step 0
    refuse_unauthenticated(settings.listeners("server"))
    # Step 1
    interceptors: list[grpc.ServerInterceptor] = []
    if settings.auth.enabled:
        token = read_token(settings.auth.token_file, "server.auth.token_file") if settings.auth.token_file else None
        interceptors.append(AuthorizationInterceptor(token, settings.auth.allowed_identities))
    streams = StreamLimits(settings.limits.max_streams_per_client, stream_budget(settings.limits, max_workers))
    interceptors.append(StreamLimitsInterceptor(streams))
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="grpc"),
        options=[("grpc.max_receive_message_length", MAX_REQUEST_BYTES)],
        interceptors=interceptors,
    )
    # Step 2
    health_servicer = health_servicer or health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in ("", *service_names):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    # Step 3
    reflection.enable_server_reflection((*service_names, HEALTH_SERVICE_NAME, reflection.SERVICE_NAME), server)
    # Step 4
    address = f"{settings.host}:{settings.port}"
    credentials = server_credentials(settings.tls)
    try:
        if credentials is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, credentials)
    except RuntimeError as exc:
        raise InvalidConfig("server.port", f"cannot listen on {address}: {exc}") from None
    if port == 0:
        raise InvalidConfig("server.port", f"cannot listen on {address}")
    return server, port
