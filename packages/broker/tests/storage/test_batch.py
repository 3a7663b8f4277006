"""The v2 batch codec: header parsing, CRC validation, building and decoding records."""

from __future__ import annotations

import struct

import pytest

from onceflow.broker.storage import (
    ControlType,
    CorruptRecordError,
    SimpleRecord,
    build_batch,
    build_control_batch,
    decode_records,
    iter_batches,
    parse_header,
)
from onceflow.broker.storage.batch import control_marker
from onceflow.broker.storage.compression import GZIP


def test_build_and_decode_round_trip_with_headers_and_nulls() -> None:
    recs = [
        SimpleRecord(b"a", b"1", (("h", b"x"), ("n", None)), timestamp_ms=1000),
        SimpleRecord(None, b"2", timestamp_ms=1005),
        SimpleRecord(b"c", None, timestamp_ms=1002),
    ]
    raw = build_batch(recs, base_offset=10, producer_id=7, producer_epoch=2, base_sequence=40, timestamp_ms=0)
    header = parse_header(raw)
    assert (header.base_offset, header.record_count, header.last_offset_delta) == (10, 3, 2)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 40)
    assert (header.base_timestamp, header.max_timestamp, header.size) == (1000, 1005, len(raw))
    assert header.last_offset == 12 and header.next_offset == 13 and header.last_sequence == 42
    decoded = decode_records(raw)
    assert [(r.key, r.value, r.headers, r.offset, r.timestamp_ms) for r in decoded] == [
        (b"a", b"1", (("h", b"x"), ("n", None)), 10, 1000),
        (None, b"2", (), 11, 1005),
        (b"c", None, (), 12, 1002),
    ]


def test_gzip_batches_decode() -> None:
    raw = build_batch([SimpleRecord(b"k", b"v" * 500)] * 4, timestamp_ms=5, compression_codec=GZIP)
    assert parse_header(raw).compression == GZIP
    assert [r.value for r in decode_records(raw)] == [b"v" * 500] * 4


def test_control_batch_carries_marker_and_coordinator_epoch() -> None:
    raw = build_control_batch(ControlType.COMMIT, producer_id=3, producer_epoch=1, coordinator_epoch=9, timestamp_ms=1)
    header = parse_header(raw)
    assert header.is_control and header.is_transactional and header.record_count == 1
    assert control_marker(raw) == (ControlType.COMMIT, 9)
    key = decode_records(raw)[0].key
    assert key is not None and struct.unpack(">hh", key) == (0, 1)


def test_iter_batches_yields_positions_and_rejects_bad_crc() -> None:
    first, second = (
        build_batch([SimpleRecord(b"a", b"1")], timestamp_ms=1),
        build_batch([SimpleRecord(b"b", b"2")] * 2, timestamp_ms=1),
    )
    assert [(p, h.record_count) for p, h in iter_batches(first + second)] == [(0, 1), (len(first), 2)]
    damaged = bytearray(first + second)
    damaged[len(first) + 70] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC"):
        list(iter_batches(bytes(damaged)))


def test_truncated_and_bad_magic_batches_are_corrupt() -> None:
    raw = build_batch([SimpleRecord(b"a", b"1")], timestamp_ms=1)
    with pytest.raises(CorruptRecordError, match="truncated"):
        list(iter_batches(raw[:-3]))
    assert list(iter_batches(raw[:-3], allow_partial_tail=True)) == []
    bad = bytearray(raw)
    bad[16] = 1
    with pytest.raises(CorruptRecordError, match="magic"):
        parse_header(bytes(bad))


def test_base_offset_is_outside_the_crc() -> None:
    raw = bytearray(build_batch([SimpleRecord(b"a", b"1")], timestamp_ms=1))
    struct.pack_into(">q", raw, 0, 12345)
    (_position, header), *_ = iter_batches(bytes(raw))
    assert header.base_offset == 12345
