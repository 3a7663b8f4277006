"""One client connection: framing, decoding, dispatch and in-order responses.

Guarantees:
- responses leave in the order their requests arrived, even when handlers finish out of order
  (a long-polling Fetch followed by a Metadata on the same connection);
- requests other than Fetch run one at a time, in arrival order, so pipelined Produce requests of an
  idempotent producer append in sequence order; Fetch runs concurrently so its long poll does not
  hold back other requests;
- a request that gets no response (Produce with acks=0) takes no slot in the response stream;
- bad input (a frame size that is negative or above ``socket_request_max_bytes``, an unparsable
  frame, an unknown API key or version) is logged with the peer and closes this connection only;
- a frame is read in chunks. Each connection has a budget of its own
  (``queued_max_request_bytes_per_connection``): a frame up to that size never draws on anything
  shared, so no other connection's partial frames can starve this client's ordinary requests. Only
  the part of a larger frame beyond it is counted against the broker-wide ``queued_max_request_bytes``
  budget until the frame is complete and decoded; the connection whose chunk would exceed that is
  closed, so partial frames cannot grow the broker's memory past the budgets;
- before a SASL listener's client has authenticated, a frame may be at most
  ``sasl_server_max_receive_size`` (larger: closed at the size header) and never draws on the shared
  budget, so unauthenticated clients cannot take memory from authenticated ones;
- a frame must arrive whole within ``request_receive_timeout_ms`` of its size header, or its
  connection is closed and what it held is freed (slow frames cannot keep budget);
- on a SASL listener only ApiVersions, SaslHandshake and SaslAuthenticate are served until the
  client has authenticated (anything else closes the connection), and a failed authentication is
  answered, then the connection closes;
- a connection with nothing read or written for ``connections_max_idle_ms`` while no request of it
  is in flight is closed.
  An ApiVersions request of an unknown version is answered in v0 format with UNSUPPORTED_VERSION, so
  the client can retry with a version the broker has.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import struct
from typing import TYPE_CHECKING, Any

from onceflow.broker.auth import ANONYMOUS, SaslSession
from onceflow.broker.handlers import HANDLERS
from onceflow.broker.handlers.api_versions import unsupported_version_response
from onceflow.broker.handlers.context import RequestContext
from onceflow.broker.protocol import versions
from onceflow.broker.protocol.codec import (
    DecodedRequest,
    MalformedRequestError,
    UnsupportedRequestError,
    decode_request,
    encode_response,
    peek_header,
)
from onceflow.core.logging import get_logger

if TYPE_CHECKING:
    from onceflow.broker.broker import Broker
    from onceflow.broker.server.limits import QueuedRequestBytes

log = get_logger("onceflow.broker.server")

_MAX_IN_FLIGHT = 64
_READ_CHUNK = 64 * 1024
_BEFORE_AUTHENTICATION = frozenset({versions.API_VERSIONS, versions.SASL_HANDSHAKE, versions.SASL_AUTHENTICATE})
"""What a SASL listener serves before the client has authenticated."""
_ids = itertools.count(1)


class ConnectionClosedError(Exception):
    """The connection must close: the peer went away or sent something unacceptable."""


class Connection:
    """Serves one accepted socket until the peer disconnects or misbehaves (see module docs)."""

    def __init__(
        self,
        broker: Broker,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        queued_bytes: QueuedRequestBytes,
    ) -> None:
        self._broker = broker
        self._queued_bytes = queued_bytes
        self._in_flight = 0
        self._idle_s = broker.config.connections_max_idle_ms / 1000.0
        self._frame_timeout_s = broker.config.request_receive_timeout_ms / 1000.0
        self._last_activity = 0.0
        self._reader = reader
        self._writer = writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.peer_host = str(peer[0]) if isinstance(peer, tuple) else str(peer)
        self.name = f"{next(_ids)}/{self.peer}"
        self._pending: asyncio.Queue[asyncio.Task[bytes | None]] = asyncio.Queue(_MAX_IN_FLIGHT)
        self._serial = asyncio.Lock()
        config = broker.config
        self._sasl = SaslSession(config.sasl_enabled_mechanisms, broker.credentials) if config.uses_sasl else None

    async def serve(self) -> None:
        """Read, dispatch and answer requests until the connection ends; never raises."""
        response_writer = asyncio.create_task(self._write_responses())
        self._last_activity = asyncio.get_running_loop().time()
        idle_watch = asyncio.create_task(self._close_when_idle())
        try:
            await self._read_requests()
        except ConnectionClosedError as exc:
            if str(exc):
                log.warning("connection.closed", conn=self.name, reason=exc)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            for task in (response_writer, idle_watch):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            await self._drain_pending()
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()

    async def _read_requests(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                size_bytes = await self._reader.readexactly(4)
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    raise ConnectionClosedError("truncated frame size") from None
                return
            self._last_activity = loop.time()
            (size,) = struct.unpack(">i", size_bytes)
            own_budget = self._own_budget(size)
            frame, reserved = bytearray(), 0
            try:
                async with asyncio.timeout(self._frame_timeout_s):
                    while len(frame) < size:
                        chunk = await self._reader.read(min(size - len(frame), _READ_CHUNK))
                        if not chunk:
                            raise ConnectionClosedError(f"peer closed in the middle of a {size}-byte frame")
                        beyond = max(0, len(frame) + len(chunk) - own_budget) - reserved
                        if beyond > 0:
                            if not self._queued_bytes.reserve(beyond):
                                raise ConnectionClosedError(
                                    "partially received requests reached "
                                    f"queued.max.request.bytes={self._queued_bytes.limit}"
                                )
                            reserved += beyond
                        frame += chunk
                        self._last_activity = loop.time()
                task = self._dispatch(bytes(frame))
            except TimeoutError:
                raise ConnectionClosedError(
                    f"{len(frame)} of a {size}-byte frame received in {self._frame_timeout_s * 1000:.0f} ms "
                    "(request.receive.timeout.ms)"
                ) from None
            finally:
                self._queued_bytes.release(reserved)
            del frame
            self._in_flight += 1
            await self._pending.put(task)

    def _own_budget(self, size: int) -> int:
        """Check a frame's announced size; returns how much of it this connection holds on its own
        budget (the rest draws on the shared one). Raises ConnectionClosedError for a frame that may
        never be received."""
        config = self._broker.config
        if size < 8 or size > config.socket_request_max_bytes:
            raise ConnectionClosedError(
                f"invalid frame size {size} (must be 8..{config.socket_request_max_bytes}, socket.request.max.bytes)"
            )
        if self._sasl is not None and not self._sasl.authenticated:
            if size > config.sasl_server_max_receive_size:
                raise ConnectionClosedError(
                    f"frame of {size} bytes before SASL authentication exceeds "
                    f"sasl.server.max.receive.size={config.sasl_server_max_receive_size}"
                )
            return size
        own = config.queued_max_request_bytes_per_connection
        limit = self._queued_bytes.limit
        if 0 <= limit < size - own:
            raise ConnectionClosedError(f"frame of {size} bytes exceeds queued.max.request.bytes={limit}")
        return own

    async def _close_when_idle(self) -> None:
        """Close the connection once nothing was read or written for ``connections.max.idle.ms`` and
        none of its requests is in flight (checked without any cost on the read path)."""
        loop = asyncio.get_running_loop()
        while True:
            idle_for = loop.time() - self._last_activity
            if idle_for < self._idle_s or self._in_flight:
                await asyncio.sleep(max(self._idle_s - idle_for, self._idle_s / 10))
                continue
            log.info(
                "connection.closed",
                conn=self.name,
                reason=f"idle for {int(idle_for * 1000)} ms (connections.max.idle.ms)",
            )
            self._writer.transport.abort()
            return

    def _dispatch(self, frame: bytes) -> asyncio.Task[bytes | None]:
        if self._sasl is not None and not self._sasl.authenticated:
            api_key = peek_header(frame).api_key
            if api_key not in _BEFORE_AUTHENTICATION:
                raise ConnectionClosedError(f"request api_key={api_key} before SASL authentication")
        try:
            request = decode_request(frame)
        except UnsupportedRequestError as exc:
            if exc.api_key == versions.API_VERSIONS:
                log.info("request.unsupported_api_versions", conn=self.name, api_version=exc.api_version, answer="v0")
                return _done(encode_response(exc.correlation_id, unsupported_version_response()))
            raise ConnectionClosedError(
                f"unsupported request api_key={exc.api_key} api_version={exc.api_version}"
            ) from None
        except MalformedRequestError as exc:
            raise ConnectionClosedError(f"malformed request: {exc}") from None
        except Exception as exc:  # kio's native reader may raise anything on hostile bytes
            prefix = peek_header(frame)
            raise ConnectionClosedError(
                f"undecodable request api_key={prefix.api_key} api_version={prefix.api_version}: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        return asyncio.create_task(self._run(request))

    async def _run(self, request: DecodedRequest) -> bytes | None:
        ctx = RequestContext(
            broker=self._broker,
            conn=self.name,
            client_host=self.peer_host,
            client_id=request.client_id,
            api_key=request.api_key,
            api_version=request.api_version,
            principal=(self._sasl.principal if self._sasl is not None else None) or ANONYMOUS,
            sasl=self._sasl,
        )
        handler = HANDLERS[request.api_key]
        log.debug("request.received", **ctx.log_dict(), correlation_id=request.correlation_id)
        response: Any
        if request.api_key == versions.FETCH:
            response = await handler(ctx, request.body)
        else:
            async with self._serial:
                response = await handler(ctx, request.body)
        log.debug("request.answered", **ctx.log_dict(), correlation_id=request.correlation_id)
        if response is None:
            return None
        return encode_response(request.correlation_id, response)

    async def _write_responses(self) -> None:
        while True:
            task = await self._pending.get()
            try:
                data = await task
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("request.failed", conn=self.name, closing="true")
                self._writer.close()
                return
            finally:
                self._in_flight -= 1
            if data is not None:
                self._writer.write(data)
                await self._writer.drain()
                self._last_activity = asyncio.get_running_loop().time()
            if self._sasl is not None and self._sasl.failed:  # answered; now the connection ends
                self._writer.close()
                return

    async def _drain_pending(self) -> None:
        while not self._pending.empty():
            task = self._pending.get_nowait()
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task


def _done(data: bytes) -> asyncio.Task[bytes | None]:
    async def ready() -> bytes | None:
        return data

    return asyncio.create_task(ready())
