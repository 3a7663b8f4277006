"""A fault-injecting TCP proxy that understands Kafka framing, for tests.

It sits between clients and a broker and forwards frames both ways. A :class:`FaultPlan` tells it
to lose the response to a request after the broker has handled it: the proxy swallows the
response frame and cuts the connection, which is what a client sees when the network fails
between the broker's append and the client's ack (the reference article's duplicate scenario).

Guarantees:
- requests always reach the broker intact and in order; only responses are lost;
- every lost response is counted per API key in :attr:`KafkaFaultProxy.dropped`;
- it runs on its own thread and event loop, so synchronous clients can be used in the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

PRODUCE_API_KEY = 0


@dataclass
class FaultPlan:
    """Which responses to lose: the next ``count`` responses to requests with ``api_key``."""

    api_key: int = PRODUCE_API_KEY
    count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def arm(self, count: int, api_key: int = PRODUCE_API_KEY) -> None:
        """Lose the next ``count`` responses to ``api_key`` requests."""
        with self._lock:
            self.api_key = api_key
            self.count = count

    def take(self, api_key: int) -> bool:
        """True if a response to ``api_key`` must be lost now (and consume one unit of the plan)."""
        with self._lock:
            if self.count > 0 and api_key == self.api_key:
                self.count -= 1
                return True
            return False


class KafkaFaultProxy:
    """Listen on 127.0.0.1:<free port> and forward to ``upstream_host:upstream_port``."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.plan = FaultPlan()
        self.dropped: Counter[int] = Counter()
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kafka-fault-proxy", daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> KafkaFaultProxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(timeout=10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def __enter__(self) -> KafkaFaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _listen(self) -> asyncio.Server:
        return await asyncio.start_server(self._handle, "127.0.0.1", 0)

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            broker_reader, broker_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return
        pending: dict[int, int] = {}  # correlation id -> api key of in-flight requests
        cut = asyncio.Event()
        upward = asyncio.create_task(_forward(client_reader, broker_writer, partial(_request, pending), cut))
        downward = asyncio.create_task(_forward(broker_reader, client_writer, partial(self._response, pending), cut))
        await cut.wait()
        for task in (upward, downward):
            task.cancel()
        for writer in (client_writer, broker_writer):
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _response(self, pending: dict[int, int], frame: bytes) -> bool:
        """Whether a response frame reaches the client: not if the plan loses it."""
        (correlation_id,) = struct.unpack_from(">i", frame, 4)
        api_key = pending.pop(correlation_id, -1)
        if self.plan.take(api_key):
            # The broker handled the request; the client never hears about it.
            self.dropped[api_key] += 1
            return False
        return True


async def _forward(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, passes: Callable[[bytes], bool], cut: asyncio.Event
) -> None:
    """Copy frames from ``reader`` to ``writer`` until ``passes(frame)`` is False (that frame is lost)
    or either side fails; then set ``cut``."""
    try:
        while True:
            frame = await _read_frame(reader)
            if not passes(frame):
                return
            writer.write(frame)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, struct.error):
        pass
    finally:
        cut.set()


def _request(pending: dict[int, int], frame: bytes) -> bool:
    """Note a request frame's API key under its correlation id; requests always reach the broker."""
    api_key, _version, correlation_id = struct.unpack_from(">hhi", frame, 4)
    pending[correlation_id] = api_key
    return True


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    size_bytes = await reader.readexactly(4)
    (size,) = struct.unpack(">i", size_bytes)
    return size_bytes + await reader.readexactly(size)
