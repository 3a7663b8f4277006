"""``KafkaConnection``: a small blocking Kafka-protocol client connection for admin tools.

It sends kio request entities over one TCP connection and reads the responses, exactly as a real
client frames them (size prefix, request header v1/v2, body). One request at a time; no version
negotiation: callers pick request versions the broker supports.
"""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2 import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1 import SaslHandshakeRequest
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

from onceflow.broker.config import parse_host_port


class KafkaConnection:
    """One TCP connection to a broker at ``bootstrap`` (``host:port``). Use as a context manager.

    Raises ``OSError`` if the broker cannot be reached and ``ConnectionError`` if it closes the
    connection while a response is awaited.
    """

    def __init__(self, bootstrap: str, client_id: str = "onceflow-admin", timeout: float = 10.0) -> None:
        host, port = parse_host_port(bootstrap)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.client_id = client_id
        self._correlation = 0

    def __enter__(self) -> KafkaConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()

    def login_plain(self, user: str, password: str) -> None:
        """Authenticate this connection with SASL/PLAIN (SaslHandshake v1, SaslAuthenticate v2); raises
        ``PermissionError`` with the broker's message when it refuses."""
        handshake = self.request(SaslHandshakeRequest(mechanism="PLAIN"))
        if handshake.error_code is not ErrorCode.none:
            raise PermissionError(f"SASL handshake refused: {handshake.error_code.name} {list(handshake.mechanisms)}")
        token = b"\0" + user.encode() + b"\0" + password.encode()
        answer = self.request(SaslAuthenticateRequest(auth_bytes=token))
        if answer.error_code is not ErrorCode.none:
            raise PermissionError(f"SASL authentication refused: {answer.error_code.name} {answer.error_message}")

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

    def request(self, request: Any, response_cls: type[Any] | None = None) -> Any:
        """Send ``request`` and return the decoded response entity of the same API and version
        (decoded as ``response_cls`` if given: a schema that reads some field differently)."""
        self.send_frame(self.encode(request))
        if response_cls is None:
            response_cls = load_response_schema(request.__api_key__, request.__version__)
        return decode_response(response_cls, self.read_frame())[1]


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
