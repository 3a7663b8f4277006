"""Encoding and decoding of the records inside a v2 batch, for internal logs, compaction and tests.

The produce and fetch paths never call into this module: they move batches as bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from crc32c import crc32c

from onceflow.broker.storage import compression
from onceflow.broker.storage.errors import CorruptRecordError
from onceflow.broker.storage.header import (
    CONTROL_FLAG,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    TRANSACTIONAL_FLAG,
    parse_header,
    verify_batch,
)

_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


class ControlType(IntEnum):
    """Type of a transaction marker, stored in the key of a control record."""

    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True)
class SimpleRecord:
    """One decoded record. ``offset``/``timestamp_ms`` are -1 when not yet assigned."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    offset: int = -1
    timestamp_ms: int = -1


def _write_varint(out: bytearray, value: int) -> None:
    zigzag = (value << 1) ^ (value >> 63)
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = 0
    raw = 0
    while True:
        if pos >= len(buf):
            raise CorruptRecordError("truncated varint in record")
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint too long")


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        _write_varint(out, -1)
    else:
        _write_varint(out, len(data))
        out += data


def _read_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = _read_varint(buf, pos)
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(buf):
        raise CorruptRecordError("truncated record field")
    return buf[pos:end], end


def _encode_record(out: bytearray, record: SimpleRecord, offset_delta: int, timestamp_delta: int) -> None:
    body = bytearray(b"\x00")  # attributes
    _write_varint(body, timestamp_delta)
    _write_varint(body, offset_delta)
    _write_bytes(body, record.key)
    _write_bytes(body, record.value)
    _write_varint(body, len(record.headers))
    for name, value in record.headers:
        _write_bytes(body, name.encode())
        _write_bytes(body, value)
    _write_varint(out, len(body))
    out += body


def encode_batch(
    records: Sequence[SimpleRecord],
    *,
    base_offset: int,
    last_offset_delta: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    attributes: int = 0,
    timestamp_ms: int,
    max_timestamp_ms: int | None = None,
    partition_leader_epoch: int = 0,
) -> bytes:
    """Encode a v2 batch. Records with ``offset >= 0`` keep it (compaction leaves gaps); others are
    numbered consecutively from ``base_offset``. Records with ``timestamp_ms < 0`` get ``timestamp_ms``.
    The compression bits of ``attributes`` select the codec (none or gzip).
    """
    stamps = [r.timestamp_ms if r.timestamp_ms >= 0 else timestamp_ms for r in records]
    base_timestamp = min(stamps) if stamps else timestamp_ms
    body = bytearray()
    delta = 0
    for index, record in enumerate(records):
        delta = record.offset - base_offset if record.offset >= 0 else index
        _encode_record(body, record, delta, stamps[index] - base_timestamp)
    if last_offset_delta is None:
        last_offset_delta = delta
    if max_timestamp_ms is None:
        max_timestamp_ms = max(stamps) if stamps else timestamp_ms
    payload = compression.compress(attributes & 0x07, bytes(body))
    batch = bytearray(HEADER_SIZE)
    batch += payload
    HEADER_STRUCT.pack_into(
        batch,
        0,
        base_offset,
        len(batch) - LOG_OVERHEAD,
        partition_leader_epoch,
        2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp_ms,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))
    return bytes(batch)


def build_batch(
    records: Sequence[SimpleRecord],
    *,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    timestamp_ms: int,
    compression_codec: int = compression.NONE,
) -> bytes:
    """Build a v2 batch of ``records`` (uncompressed unless ``compression_codec`` says gzip)."""
    attributes = (TRANSACTIONAL_FLAG if transactional else 0) | compression_codec
    return encode_batch(
        records,
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        attributes=attributes,
        timestamp_ms=timestamp_ms,
    )


def build_control_batch(
    marker: ControlType, *, producer_id: int, producer_epoch: int, coordinator_epoch: int, timestamp_ms: int
) -> bytes:
    """Build a transactional control batch holding one COMMIT or ABORT marker record."""
    record = SimpleRecord(key=_CONTROL_KEY.pack(0, int(marker)), value=_CONTROL_VALUE.pack(0, coordinator_epoch))
    return encode_batch(
        [record],
        base_offset=0,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        attributes=TRANSACTIONAL_FLAG | CONTROL_FLAG,
        timestamp_ms=timestamp_ms,
    )


def decode_records(batch: bytes | memoryview) -> list[SimpleRecord]:
    """Decode every record of one whole batch, verifying its CRC; offsets and timestamps are absolute.

    With LogAppendTime every record carries the batch's max timestamp, as Kafka clients report it.
    """
    data = bytes(batch)
    header = parse_header(data)
    verify_batch(data, 0, header)
    buf = compression.decompress(header.compression, memoryview(data)[HEADER_SIZE : header.size])
    log_append_time = header.timestamp_type == 1
    records: list[SimpleRecord] = []
    pos = 0
    for _ in range(header.record_count):
        length, pos = _read_varint(buf, pos)
        end = pos + length
        pos += 1  # attributes
        ts_delta, pos = _read_varint(buf, pos)
        offset_delta, pos = _read_varint(buf, pos)
        key, pos = _read_bytes(buf, pos)
        value, pos = _read_bytes(buf, pos)
        count, pos = _read_varint(buf, pos)
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(count):
            name, pos = _read_bytes(buf, pos)
            header_value, pos = _read_bytes(buf, pos)
            headers.append(((name or b"").decode(), header_value))
        if pos != end:
            raise CorruptRecordError("record length does not match its fields")
        timestamp = header.max_timestamp if log_append_time else header.base_timestamp + ts_delta
        records.append(SimpleRecord(key, value, tuple(headers), header.base_offset + offset_delta, timestamp))
    return records


def control_marker(batch: bytes | memoryview) -> tuple[ControlType, int]:
    """Return ``(marker type, coordinator epoch)`` of a control batch."""
    records = decode_records(batch)
    if not records or records[0].key is None or len(records[0].key) < 4:
        raise CorruptRecordError("control batch without a valid control record key")
    _version, kind = _CONTROL_KEY.unpack_from(records[0].key)
    value = records[0].value
    coordinator_epoch = _CONTROL_VALUE.unpack_from(value)[1] if value is not None and len(value) >= 6 else -1
    return ControlType(kind), int(coordinator_epoch)


def control_type_of(batch: bytes | memoryview) -> ControlType:
    """Return the marker type (COMMIT or ABORT) of a control batch."""
    return control_marker(batch)[0]
