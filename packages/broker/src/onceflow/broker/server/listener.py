"""The TCP listener: accepts connections and serves each with a :class:`Connection`.

Guarantees: one misbehaving connection never affects another; ``stop`` stops accepting, then closes
every open connection and waits for their tasks to end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from onceflow.broker.server.connection import Connection

if TYPE_CHECKING:
    from onceflow.broker.broker import Broker

log = logging.getLogger("onceflow.broker.server")


class BrokerServer:
    """Kafka-protocol TCP server bound to ``broker.config.listen``."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        """The bound port (the real one when the configured port was 0)."""
        if self._server is None or not self._server.sockets:
            raise RuntimeError("server is not listening")
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        """Bind and start accepting; raises OSError if the address is unavailable."""
        config = self._broker.config
        self._server = await asyncio.start_server(
            self._accept, host=config.listen_host or None, port=config.listen_port, reuse_address=True
        )

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
        connection = Connection(self._broker, reader, writer)
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        log.debug("connection.opened conn=%s", connection.name)
        try:
            await connection.serve()
        except asyncio.CancelledError:
            # Cancelled by stop(). Ending normally keeps asyncio's start_server callback from
            # logging the cancellation as an error (Python 3.11).
            pass
        finally:
            self._connections.discard(task)
            log.debug("connection.ended conn=%s", connection.name)
