"""One authorization rule for the mutating RPCs of every onceflow gRPC service.

The rule (server side, :class:`AuthorizationInterceptor`, installed by ``build_server`` when
``server.auth`` names a token file or client identities):

1. A read-only RPC (its method name starts with Get, List, Watch or Describe; health and reflection)
   passes: the transport (TLS, or mTLS with ``require_client_auth``) already decides who connects.
2. A mutating RPC (every other one: RegisterWriter, CommitTransaction, PrepareTransaction,
   ResolveTransaction, CreateConnector, RunAudit, ...) passes when the call carries
   ``authorization: Bearer <token>`` equal to the token in ``auth.token_file``, or when the client's
   certificate names one of ``auth.allowed_identities`` (its common name or a subject alternative
   name; needs mTLS).
3. Otherwise it fails: UNAUTHENTICATED when the call presented nothing (no token, no certificate),
   PERMISSION_DENIED when what it presented is not allowed. The servicer never runs.

Client side, :func:`bearer_token_interceptor` adds the token of a ``tls.token_file`` to every call
(``open_channel`` does it for every onceflow client).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import grpc
from pydantic import BaseModel

from onceflow.core.errors import InvalidConfig

#: Method-name prefixes of the read-only RPCs.
READ_ONLY_PREFIXES = ("Get", "List", "Watch", "Describe")
#: Services that are read-only as a whole.
READ_ONLY_SERVICES = ("grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection")
AUTHORIZATION = "authorization"


def is_read_only(method: str) -> bool:
    """``method`` is the full name ``/package.Service/Method``."""
    service, _, name = method.lstrip("/").rpartition("/")
    return service in READ_ONLY_SERVICES or name.startswith(READ_ONLY_PREFIXES)


def read_token(path: str, setting: str) -> str:
    """The token in ``path`` (surrounding white space stripped); InvalidConfig naming ``setting``."""
    try:
        token = Path(path).read_text().strip()
    except OSError as exc:
        raise InvalidConfig(setting, f"cannot read {path}: {exc.strerror or exc}") from None
    if not token:
        raise InvalidConfig(setting, f"{path} holds no token")
    return token


def check_token_files(settings: BaseModel, prefix: str = "") -> None:
    """Read every ``token_file`` that ``settings`` name, at any depth (a server's ``auth.token_file``, a
    client's ``tls.token_file``): a missing or empty one raises :class:`InvalidConfig` naming the
    setting, so a service stops before it starts anything (a coordinator before it fences the one
    that serves)."""
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        path = f"{prefix}.{name}" if prefix else name
        if name == "token_file" and isinstance(value, str) and value:
            read_token(value, path)
        items = value if isinstance(value, list | tuple) else [value]
        for index, item in enumerate(items):
            if isinstance(item, BaseModel):
                check_token_files(item, path if items is not value else f"{path}[{index}]")


class AuthorizationInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]
    """Steps 1-3 of the module docstring for every call of the server."""

    def __init__(self, token: str | None, identities: Iterable[str]) -> None:
        self._expected = f"Bearer {token}".encode() if token else None
        self._identities = frozenset(identities)

    def intercept_service(self, continuation: Callable[[Any], Any], details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        # Step 1
        if handler is None or is_read_only(details.method):
            return handler
        # Steps 2 and 3: the check needs the call's context (metadata, peer certificate)
        return _guarded(handler, self._check, details.method)

    def _check(self, context: grpc.ServicerContext, method: str) -> None:
        token = next((value for key, value in context.invocation_metadata() if key == AUTHORIZATION), None)
        presented = token is not None
        if token is not None and self._expected is not None:
            given = token.encode() if isinstance(token, str) else bytes(token)
            if hmac.compare_digest(given, self._expected):
                return
        names = _peer_identities(context)
        presented = presented or bool(names)
        if names & self._identities:
            return
        if presented:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, f"{method}: the token or client identity is not allowed")
        context.abort(
            grpc.StatusCode.UNAUTHENTICATED,
            f"{method} changes state: send 'authorization: Bearer <token>' or an allowed client certificate",
        )


def _peer_identities(context: grpc.ServicerContext) -> set[str]:
    auth = context.auth_context() or {}
    names: set[str] = set()
    for key in ("x509_common_name", "x509_subject_alternative_name"):
        names.update(value.decode("utf-8", "replace") for value in auth.get(key, []))
    return names


def _guarded(handler: Any, check: Callable[[grpc.ServicerContext, str], None], method: str) -> Any:
    """The same handler, with ``check`` run before the servicer (each of the four call kinds)."""

    def wrap(behaviour: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(request: Any, context: grpc.ServicerContext) -> Any:
            check(context, method)
            return behaviour(request, context)

        return guarded

    options = {"request_deserializer": handler.request_deserializer, "response_serializer": handler.response_serializer}
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(wrap(handler.unary_unary), **options)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(wrap(handler.unary_stream), **options)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(wrap(handler.stream_unary), **options)
    return grpc.stream_stream_rpc_method_handler(wrap(handler.stream_stream), **options)


class _BearerToken(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
    grpc.StreamUnaryClientInterceptor,  # type: ignore[misc]
    grpc.StreamStreamClientInterceptor,  # type: ignore[misc]
):
    def __init__(self, token: str) -> None:
        self._header = (AUTHORIZATION, f"Bearer {token}")

    def _details(self, details: Any) -> Any:
        return _CallDetails(
            method=details.method,
            timeout=details.timeout,
            metadata=[*(details.metadata or ()), self._header],
            credentials=details.credentials,
            wait_for_ready=getattr(details, "wait_for_ready", None),
            compression=getattr(details, "compression", None),
        )

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)


class _CallDetails(grpc.ClientCallDetails):  # type: ignore[misc]
    def __init__(
        self, *, method: str, timeout: float | None, metadata: Any, credentials: Any, wait_for_ready: Any,
        compression: Any,
    ) -> None:  # fmt: skip
        self.method = method
        self.timeout = timeout
        self.metadata = metadata
        self.credentials = credentials
        self.wait_for_ready = wait_for_ready
        self.compression = compression


def bearer_token_interceptor(token_file: str, setting: str = "tls.token_file") -> _BearerToken:
    """A client interceptor that sends the token in ``token_file`` with every call."""
    return _BearerToken(read_token(token_file, setting))
