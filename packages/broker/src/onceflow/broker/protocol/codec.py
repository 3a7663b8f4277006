"""Decoding request frames and encoding response frames with kio.

A frame is the bytes after the 4-byte size prefix. Every request frame starts with
``api_key:int16, api_version:int16, correlation_id:int32``; the rest of the header and the body are
versioned schemas that kio reads and writes.

Guarantees:
- :func:`peek_header` never raises on frames of 8 bytes or more;
- :func:`decode_request` either returns a fully parsed request or raises :class:`MalformedRequestError`
  (bad bytes) or :class:`UnsupportedRequestError` (an API key or version this broker does not answer);
  a null array the schema does not allow comes back as an empty one (see :mod:`.null_arrays`);
- :func:`encode_response` produces the size-prefixed bytes of the header version that belongs to the
  response's API version (kio pins ApiVersions responses to header v0, as Kafka does).
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

from kio.index import load_request_schema
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError
from kio.static.primitive import i32

from onceflow.broker.protocol.null_arrays import fill_null_arrays
from onceflow.broker.protocol.versions import is_supported

_PREFIX = struct.Struct(">hhi")


class MalformedRequestError(Exception):
    """A frame that cannot be parsed as a Kafka request."""


class UnsupportedRequestError(Exception):
    """A well-formed header naming an API key or version this broker does not implement."""

    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(f"unsupported api_key={api_key} api_version={api_version}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


@dataclass(frozen=True, slots=True)
class RequestPrefix:
    """The fixed, version-independent start of every request header."""

    api_key: int
    api_version: int
    correlation_id: int


@dataclass(frozen=True, slots=True)
class DecodedRequest:
    """A parsed request: header fields plus the kio body entity of the negotiated version."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any


def peek_header(frame: bytes) -> RequestPrefix:
    """Read the fixed header prefix; raises :class:`MalformedRequestError` if the frame is too short."""
    if len(frame) < _PREFIX.size:
        raise MalformedRequestError(f"frame of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _PREFIX.unpack_from(frame, 0)
    return RequestPrefix(api_key, api_version, correlation_id)


def decode_request(frame: bytes) -> DecodedRequest:
    """Parse a whole request frame (see module docs for the error contract)."""
    prefix = peek_header(frame)
    if not is_supported(prefix.api_key, prefix.api_version):
        raise UnsupportedRequestError(prefix.api_key, prefix.api_version, prefix.correlation_id)
    request_cls = load_request_schema(prefix.api_key, prefix.api_version)
    header_cls = request_cls.__header_schema__
    try:
        header, used = entity_reader(header_cls)(frame, 0)
        body, _ = entity_reader(request_cls)(frame, used)
        body = fill_null_arrays(body)
    except (SerialError, ValueError, TypeError, UnicodeDecodeError, OverflowError) as exc:
        raise MalformedRequestError(
            f"cannot parse api_key={prefix.api_key} api_version={prefix.api_version}: {type(exc).__name__}: {exc}"
        ) from exc
    return DecodedRequest(
        api_key=prefix.api_key,
        api_version=prefix.api_version,
        correlation_id=prefix.correlation_id,
        client_id=header.client_id,
        body=body,
    )


def encode_response(correlation_id: int, response: Any) -> bytes:
    """Serialize ``response`` with its header into one size-prefixed frame."""
    header_cls = type(response).__header_schema__
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    entity_writer(header_cls)(buffer, header_cls(correlation_id=i32(correlation_id)))
    entity_writer(type(response))(buffer, response)
    data = buffer.getbuffer()
    struct.pack_into(">i", data, 0, len(data) - 4)
    return bytes(data)
