"""The TCP listener: accepts connections and serves each with a :class:`Connection`.

Guarantees: one misbehaving connection never affects another; a client host gets at most
``max_connections_per_ip`` connections (the next is closed at once, logged); each connection
receives frames up to ``queued_max_request_bytes_per_connection`` on a budget of its own, and only the
rest of larger frames shares one ``queued_max_request_bytes`` budget (see :mod:`.limits`,
:mod:`.connection`);
``stop`` stops accepting, then closes every open connection and waits for their tasks to end.

When ``accept()`` fails for lack of resources (EMFILE, ENFILE, ENOBUFS, ENOMEM) asyncio stops
accepting for one second before trying again (``asyncio.constants.ACCEPT_RETRY_DELAY``), so the
broker backs off instead of spinning and recovers once descriptors are free again; the failures are
logged as one ``listener.accept_failed`` line a second at most (not a traceback per attempt).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from asyncio.constants import ACCEPT_RETRY_DELAY
from typing import TYPE_CHECKING, Any

from onceflow.broker.server.connection import Connection
from onceflow.broker.server.limits import ConnectionsPerIp, QueuedRequestBytes
from onceflow.core.logging import get_logger

if TYPE_CHECKING:
    from onceflow.broker.broker import Broker
    from onceflow.broker.config import BrokerConfig

log = get_logger("onceflow.broker.server")

_ACCEPT_OUT_OF_RESOURCES = "socket.accept() out of system resource"
"""asyncio's message when accept() fails with EMFILE/ENFILE/ENOBUFS/ENOMEM (it then pauses accepting)."""


class BrokerServer:
    """Kafka-protocol TCP server bound to ``broker.config.listen``."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        config = broker.config
        self._queued_bytes = QueuedRequestBytes(config.queued_max_request_bytes)
        self._per_ip = ConnectionsPerIp(config.max_connections_per_ip)
        self._accept_failures = 0
        self._accept_failure_logged = -1e9

    @property
    def port(self) -> int:
        """The bound port (the real one when the configured port was 0)."""
        if self._server is None or not self._server.sockets:
            raise RuntimeError("server is not listening")
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        """Bind and start accepting; raises OSError if the address is unavailable."""
        config = self._broker.config
        asyncio.get_running_loop().set_exception_handler(self._loop_exception)
        self._server = await asyncio.start_server(
            self._accept,
            host=config.listen_host or None,
            port=config.listen_port,
            reuse_address=True,
            ssl=_tls_context(config) if config.uses_tls else None,
        )

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """One log line (at most one a second) for accept() failing for lack of resources, instead
        of asyncio's traceback per attempt; everything else goes to asyncio's default handler."""
        if context.get("message") != _ACCEPT_OUT_OF_RESOURCES:
            loop.default_exception_handler(context)
            return
        now = loop.time()
        self._accept_failures += 1
        if now - self._accept_failure_logged >= 1.0:
            error = context.get("exception")
            log.warning(
                "listener.accept_failed",
                reason=getattr(error, "strerror", None) or error,
                failures=self._accept_failures,
                retry_in_ms=int(ACCEPT_RETRY_DELAY * 1000),
            )
            self._accept_failure_logged = now
            self._accept_failures = 0

    async def stop(self) -> None:
        """Stop accepting and close all connections."""
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(BaseException):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), timeout=2.0)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = Connection(self._broker, reader, writer, self._queued_bytes)
        if not self._per_ip.open(connection.peer_host):
            log.warning(
                "connection.refused",
                conn=connection.name,
                reason=f"max.connections.per.ip={self._per_ip.limit} reached",
            )
            writer.transport.abort()
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        log.debug("connection.opened", conn=connection.name)
        try:
            await connection.serve()
        except asyncio.CancelledError:
            # Cancelled by stop(). Ending normally keeps asyncio's start_server callback from
            # logging the cancellation as an error (Python 3.11).
            pass
        finally:
            self._per_ip.close(connection.peer_host)
            self._connections.discard(task)
            log.debug("connection.ended", conn=connection.name)


def _tls_context(config: BrokerConfig) -> ssl.SSLContext:
    """The server side of the TLS listener; with ``ssl_cafile`` clients must present a certificate."""
    assert config.ssl_certfile is not None and config.ssl_keyfile is not None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config.ssl_certfile, config.ssl_keyfile)
    if config.ssl_cafile is not None:
        context.load_verify_locations(config.ssl_cafile)
        context.verify_mode = ssl.CERT_REQUIRED
    return context
