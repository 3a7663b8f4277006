"""The on-disk format of a state log: a file header, then CRC-framed batches of key/value records.

Layout (all integers big-endian)::

    file header : b"OFSTATE" + version:u8                    (8 bytes)
    frame       : body_length:u32  crc32c(body):u32  body
    body        : record_count:u32  record*
    record      : key_length:u32  value_length:i32  key  value   (value_length -1 = tombstone)

A frame is the unit of atomicity: replay yields either every record of a frame or none of them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import crc32c

MAGIC = b"OFSTATE"
FORMAT_VERSION = 1
FILE_HEADER = MAGIC + bytes([FORMAT_VERSION])

_FRAME_HEADER = struct.Struct(">II")
_COUNT = struct.Struct(">I")
_RECORD_HEADER = struct.Struct(">Ii")
_TOMBSTONE_LENGTH = -1

Record = tuple[bytes, bytes | None]


def record_size(key: bytes, value: bytes | None) -> int:
    """Bytes a record takes inside a frame body."""
    return _RECORD_HEADER.size + len(key) + (0 if value is None else len(value))


def single_record_frame_size(key: bytes, value: bytes | None) -> int:
    """Bytes a frame holding only this record takes in the file."""
    return _FRAME_HEADER.size + _COUNT.size + record_size(key, value)


def encode_frame(records: Sequence[Record]) -> bytes:
    """Encode records as one frame (they will be replayed all together or not at all)."""
    parts = [_COUNT.pack(len(records))]
    for key, value in records:
        if value is None:
            parts.append(_RECORD_HEADER.pack(len(key), _TOMBSTONE_LENGTH))
            parts.append(key)
        else:
            parts.append(_RECORD_HEADER.pack(len(key), len(value)))
            parts.append(key)
            parts.append(value)
    body = b"".join(parts)
    return _FRAME_HEADER.pack(len(body), crc32c.crc32c(body)) + body


@dataclass(frozen=True)
class Frame:
    """A valid frame read from the file: where it starts and ends, and its records."""

    start: int
    end: int
    records: list[Record]


@dataclass(frozen=True)
class TornTail:
    """The bytes from ``start`` to the end of the file do not form a valid frame."""

    start: int
    reason: str


def read_frames(file: BinaryIO, start: int, end: int) -> Iterator[Frame | TornTail]:
    """Yield the valid frames between ``start`` and ``end``; a final ``TornTail`` if the rest is invalid.

    ``file`` must be positioned at ``start``. Reading stops at the first invalid frame: nothing after a
    damaged frame is trusted.
    """
    position = start
    while position < end:
        header = file.read(_FRAME_HEADER.size)
        if len(header) < _FRAME_HEADER.size or position + _FRAME_HEADER.size > end:
            yield TornTail(position, "partial frame header")
            return
        body_length, crc = _FRAME_HEADER.unpack(header)
        frame_end = position + _FRAME_HEADER.size + body_length
        if frame_end > end:
            yield TornTail(position, f"frame of {body_length} bytes runs past the end of the file")
            return
        body = file.read(body_length)
        if len(body) < body_length:
            yield TornTail(position, "partial frame body")
            return
        if crc32c.crc32c(body) != crc:
            yield TornTail(position, "CRC mismatch")
            return
        records = _decode_body(body)
        if records is None:
            yield TornTail(position, "malformed frame body")
            return
        yield Frame(position, frame_end, records)
        position = frame_end


def _decode_body(body: bytes) -> list[Record] | None:
    """Decode a CRC-valid body; ``None`` if its structure is inconsistent."""
    if len(body) < _COUNT.size:
        return None
    (count,) = _COUNT.unpack_from(body, 0)
    offset = _COUNT.size
    records: list[Record] = []
    for _ in range(count):
        if offset + _RECORD_HEADER.size > len(body):
            return None
        key_length, value_length = _RECORD_HEADER.unpack_from(body, offset)
        offset += _RECORD_HEADER.size
        key = body[offset : offset + key_length]
        offset += key_length
        value: bytes | None = None
        if value_length != _TOMBSTONE_LENGTH:
            if value_length < 0:
                return None
            value = body[offset : offset + value_length]
            offset += value_length
        if offset > len(body):
            return None
        records.append((key, value))
    if offset != len(body):
        return None
    return records
