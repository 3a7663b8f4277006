"""A minimal blocking Kafka-protocol client for tests: send kio request entities, read responses.

It speaks exactly what the broker sees from a real client (size prefix, request header v1/v2, body),
and can also send raw bytes, so tests can probe the broker with malformed input.
"""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32


class WireClient:
    """One TCP connection to a broker. Use as a context manager."""

    def __init__(self, bootstrap: str, client_id: str = "wire-test", timeout: float = 10.0) -> None:
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.client_id = client_id
        self._correlation = 0

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are."""
        self.sock.sendall(data)

    def send_frame(self, frame: bytes) -> None:
        """Write one size-prefixed frame."""
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)

    def encode(self, request: Any, correlation_id: int | None = None) -> bytes:
        """Header plus body of ``request`` (a kio request entity), without the size prefix."""
        if correlation_id is None:
            self._correlation += 1
            correlation_id = self._correlation
        return encode_request(request, correlation_id, self.client_id)

    def read_frame(self) -> bytes:
        """Read one size-prefixed frame; raises ConnectionError if the broker closed the socket."""
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def _read_exactly(self, size: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            chunk = self.sock.recv(size - len(chunks))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            chunks += chunk
        return bytes(chunks)

    def request(self, request: Any) -> Any:
        """Send ``request`` and return the decoded response entity of the same API and version."""
        self.send_frame(self.encode(request))
        response_cls = load_response_schema(request.__api_key__, request.__version__)
        return decode_response(response_cls, self.read_frame())[1]

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True if the broker closes this connection within ``timeout`` (reads until EOF)."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
        except TimeoutError:
            return False
        except ConnectionError:
            return True
        return True


def encode_request(request: Any, correlation_id: int, client_id: str | None) -> bytes:
    """Request header (of the version ``request`` needs) plus body, without the size prefix."""
    header_cls = type(request).__header_schema__
    buffer = io.BytesIO()
    header = header_cls(
        request_api_key=i16(request.__api_key__),
        request_api_version=i16(request.__version__),
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    entity_writer(header_cls)(buffer, header)
    entity_writer(type(request))(buffer, request)
    return buffer.getvalue()


def decode_response(response_cls: type[Any], frame: bytes) -> tuple[int, Any]:
    """(correlation id, response entity) of a response frame."""
    header_cls = response_cls.__header_schema__
    header, used = entity_reader(header_cls)(frame, 0)
    body, _ = entity_reader(response_cls)(frame, used)
    return int(header.correlation_id), body
