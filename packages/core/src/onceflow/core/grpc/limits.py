"""Streams are bounded per client and in total, so that reads cannot starve writes (docs/design.md, "Security").

A gRPC Python server runs each call on a thread of its pool, and a streaming call (WatchResults,
WatchRows, any client or server stream) keeps its thread for as long as it is open. Unbounded, a
few clients that open streams and never read hold every thread, and every other call, the
authenticated mutating ones included, waits until its deadline. :class:`StreamLimitsInterceptor`
(installed by :func:`~onceflow.core.grpc.build_server` on every onceflow server) admits a streaming
call only within ``server.limits``:

    1. The client (its address, without the port) has fewer than ``max_streams_per_client`` open
       streams, and the server fewer than ``max_streams``; otherwise the call fails at once with
       RESOURCE_EXHAUSTED naming the limit, and the servicer never runs.
    2. The slot is given back when the call ends: the stream finished or failed, or the client
       went away (``context.add_callback``), whichever comes first.

``max_streams`` stays below the pool's size (:func:`stream_budget`), so the remaining threads always
serve the unary calls, the refusals of step 1 included.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, Final

import grpc

from onceflow.core.errors import InvalidConfig
from onceflow.core.logging import get_logger
from onceflow.core.settings import GrpcLimitsSettings

#: Worker threads a server always keeps for the calls that are not streams.
MIN_RESERVED_WORKERS: Final = 2
#: At most one ``grpc.stream_refused`` line per this many seconds (a flood must not flood the log).
REFUSAL_LOG_INTERVAL_S: Final = 5.0

_log = get_logger(__name__)


def stream_budget(limits: GrpcLimitsSettings, max_workers: int, prefix: str = "server") -> int:
    """The total of open streams for a pool of ``max_workers`` threads; InvalidConfig when it leaves
    fewer than :data:`MIN_RESERVED_WORKERS` threads for the other calls."""
    total = limits.max_streams or max_workers // 2
    if total < 1 or total > max_workers - MIN_RESERVED_WORKERS:
        raise InvalidConfig(
            f"{prefix}.limits.max_streams",
            f"{total} open streams would leave fewer than {MIN_RESERVED_WORKERS} of the server's {max_workers} "
            "worker threads for the other calls; lower it or give the server more workers",
        )
    return total


def client_of(peer: str) -> str:
    """The client's address in a gRPC peer string (``ipv4:10.0.0.7:51234`` -> ``10.0.0.7``)."""
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        return rest.rpartition(":")[0]
    return peer


class StreamLimits:
    """Open streams per client and in total (step 1 of the module docstring). Thread-safe."""

    def __init__(self, max_per_client: int, max_total: int) -> None:
        self.max_per_client = max_per_client
        self.max_total = max_total
        self._lock = threading.Lock()
        self._open: Counter[str] = Counter()

    def admit(self, client: str) -> Callable[[], None] | str:
        """A release function (idempotent) for an admitted stream, or why it is refused."""
        with self._lock:
            if self._open[client] >= self.max_per_client:
                return (
                    f"client {client} has {self._open[client]} open streams, the most "
                    f"server.limits.max_streams_per_client = {self.max_per_client} allows; close one first"
                )
            if self._open.total() >= self.max_total:
                return (
                    f"the server has {self._open.total()} open streams, the most "
                    f"server.limits.max_streams = {self.max_total} allows; retry later"
                )
            self._open[client] += 1
        released = threading.Event()

        def release() -> None:
            with self._lock:
                if released.is_set():
                    return
                released.set()
                self._open[client] -= 1
                if self._open[client] <= 0:
                    del self._open[client]

        return release

    def open_streams(self) -> int:
        with self._lock:
            return self._open.total()


class StreamLimitsInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]
    """Steps 1 and 2 of the module docstring for every streaming call; unary calls pass untouched."""

    def __init__(self, limits: StreamLimits) -> None:
        self.limits = limits
        self._refusals = 0
        self._logged_at = 0.0
        self._log_lock = threading.Lock()

    def intercept_service(self, continuation: Callable[[Any], Any], details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or handler.unary_unary is not None:
            return handler
        return self._bounded(handler, details.method)

    def _admit(self, context: grpc.ServicerContext, method: str) -> Callable[[], None]:
        # Step 1
        client = client_of(context.peer())
        admitted = self.limits.admit(client)
        if isinstance(admitted, str):
            self._note_refusal(method, client, admitted)
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"{method}: {admitted}")
        assert not isinstance(admitted, str)  # context.abort raised
        # Step 2 (the client going away)
        if not context.add_callback(admitted):
            admitted()
        return admitted

    def _note_refusal(self, method: str, client: str, reason: str) -> None:
        with self._log_lock:
            self._refusals += 1
            now = time.monotonic()
            if now - self._logged_at < REFUSAL_LOG_INTERVAL_S:
                return
            refused, self._refusals, self._logged_at = self._refusals, 0, now
        _log.warning("grpc.stream_refused", method=method, client=client, refused=refused, reason=reason)

    def _bounded(self, handler: Any, method: str) -> Any:
        options = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        admit = self._admit
        if handler.stream_unary is not None:
            behaviour = handler.stream_unary

            def bounded_unary(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
                release = admit(context, method)
                try:
                    return behaviour(requests, context)
                finally:
                    release()  # Step 2

            return grpc.stream_unary_rpc_method_handler(bounded_unary, **options)
        streaming = handler.unary_stream or handler.stream_stream

        def bounded_stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            release = admit(context, method)
            try:
                yield from streaming(request, context)
            finally:
                release()  # Step 2

        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(bounded_stream, **options)
        return grpc.stream_stream_rpc_method_handler(bounded_stream, **options)
