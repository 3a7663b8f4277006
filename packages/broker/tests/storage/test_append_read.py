"""Appending batches and reading them back as bytes."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest

from onceflow.broker.storage import (
    ControlType,
    CorruptRecordError,
    InvalidRecordError,
    LogConfig,
    OffsetOutOfRangeError,
    PartitionLog,
    RecordTooLargeError,
    SimpleRecord,
    build_batch,
    build_control_batch,
    decode_records,
    iter_batches,
)

NOW = 1_700_000_000_000
OpenLog = Callable[..., PartitionLog]
MakeBatch = Callable[..., bytes]
MakeRecords = Callable[..., list[SimpleRecord]]


def offsets_in(data: bytes) -> list[int]:
    return [r.offset for _, h in iter_batches(data) for r in decode_records(data[_ : _ + h.size])]


def test_offsets_are_contiguous_across_many_batches(open_log: OpenLog, make_batch: MakeBatch) -> None:
    log = open_log()
    expected = 0
    for count in range(1, 40):
        info = log.append(make_batch(count), now_ms=NOW)
        assert (info.base_offset, info.last_offset) == (expected, expected + count - 1)
        assert info.log_append_time_ms == -1 and info.log_start_offset == 0
        expected += count
    assert log.log_end_offset == log.high_watermark == log.last_stable_offset == expected
    assert offsets_in(log.read(0, 10**9)) == list(range(expected))


def test_read_returns_bytes_as_appended_with_offsets_rewritten(
    open_log: OpenLog, make_batch: MakeBatch, make_records: MakeRecords
) -> None:
    log = open_log()
    raw = make_batch(5)
    log.append(raw, now_ms=NOW)
    log.append(raw, now_ms=NOW)
    data = log.read(5, 10**6)
    assert data[8:] == raw[8:] and struct.unpack_from(">q", data)[0] == 5
    assert [(r.key, r.value) for r in decode_records(data)] == [(r.key, r.value) for r in make_records(5)]


def test_read_in_the_middle_of_a_batch_returns_the_whole_batch(open_log: OpenLog, make_batch: MakeBatch) -> None:
    log = open_log()
    for _ in range(4):
        log.append(make_batch(10), now_ms=NOW)
    data = log.read(25, 10**6)
    assert [h.base_offset for _, h in iter_batches(data)] == [20, 30]


def test_max_bytes_whole_batches_and_kip74(open_log: OpenLog, make_batch: MakeBatch) -> None:
    log = open_log()
    raw = make_batch(10)
    for _ in range(10):
        log.append(raw, now_ms=NOW)
    assert len(log.read(0, len(raw) * 3 + 5)) == len(raw) * 3
    assert len(log.read(0, 1)) == len(raw)  # at least one whole batch
    assert log.read(log.log_end_offset, 100) == b""


def test_max_offset_excludes_batches_starting_at_or_after_it(open_log: OpenLog, make_batch: MakeBatch) -> None:
    log = open_log()
    for _ in range(5):
        log.append(make_batch(10), now_ms=NOW)
    assert [h.base_offset for _, h in iter_batches(log.read(0, 10**6, max_offset=30))] == [0, 10, 20]
    assert [h.base_offset for _, h in iter_batches(log.read(0, 10**6, max_offset=25))] == [0, 10, 20]
    assert log.read(30, 10**6, max_offset=30) == b""


def test_out_of_range_reads(open_log: OpenLog, make_batch: MakeBatch) -> None:
    log = open_log()
    log.append(make_batch(3), now_ms=NOW)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)


def test_corrupt_batch_names_topic_partition_and_writes_nothing(open_log: OpenLog, make_batch: MakeBatch) -> None:
    log = open_log()
    damaged = bytearray(make_batch(3))
    damaged[-1] ^= 0x55
    with pytest.raises(CorruptRecordError, match=r"events-0.*CRC"):
        log.append(bytes(damaged), now_ms=NOW)
    with pytest.raises(CorruptRecordError, match=r"events-0.*truncated"):
        log.append(make_batch(3)[:-1], now_ms=NOW)
    assert log.log_end_offset == 0 and log.segments[-1].size == 0


def test_oversize_batch_is_rejected(open_log: OpenLog, make_batch: MakeBatch) -> None:
    log = open_log(LogConfig(max_message_bytes=200))
    with pytest.raises(RecordTooLargeError, match=r"max\.message\.bytes"):
        log.append(make_batch(20), now_ms=NOW)
    assert log.log_end_offset == 0


def test_clients_cannot_write_control_batches(open_log: OpenLog) -> None:
    log = open_log()
    control = build_control_batch(
        ControlType.COMMIT, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp_ms=1
    )
    with pytest.raises(InvalidRecordError):
        log.append(control, now_ms=NOW)


def test_multi_batch_request_is_appended_contiguously(open_log: OpenLog, make_batch: MakeBatch) -> None:
    log = open_log()
    info = log.append(make_batch(2) + make_batch(3) + make_batch(4), now_ms=NOW)
    assert (info.base_offset, info.last_offset) == (0, 8)
    assert [h.base_offset for _, h in iter_batches(log.read(0, 10**6))] == [0, 2, 5]


def test_log_append_time_rewrites_max_timestamp_and_crc(open_log: OpenLog, make_batch: MakeBatch) -> None:
    log = open_log(LogConfig(message_timestamp_type="LogAppendTime"))
    info = log.append(make_batch(3, timestamp_ms=5), now_ms=NOW)
    assert info.log_append_time_ms == NOW
    data = log.read(0, 10**6)
    (_, header), *_ = iter_batches(data)  # CRC verified
    assert header.timestamp_type == 1 and header.max_timestamp == NOW
    assert {r.timestamp_ms for r in decode_records(data)} == {NOW}


def test_control_markers_and_last_stable_offset(
    open_log: OpenLog, make_batch: MakeBatch, make_records: MakeRecords
) -> None:
    log = open_log()
    log.append(make_batch(2), now_ms=NOW)
    txn = build_batch(
        make_records(3), producer_id=9, producer_epoch=0, base_sequence=0, transactional=True, timestamp_ms=NOW
    )
    log.append(txn, now_ms=NOW)
    log.append(make_batch(2), now_ms=NOW)
    assert log.last_stable_offset == 2 and log.high_watermark == 7
    marker_offset = log.append_control(
        ControlType.COMMIT, producer_id=9, producer_epoch=0, coordinator_epoch=1, now_ms=NOW
    )
    assert marker_offset == 7 and log.last_stable_offset == log.high_watermark == 8


def test_offset_for_timestamp(open_log: OpenLog, make_records: MakeRecords) -> None:
    log = open_log(LogConfig(index_interval_bytes=0))
    for i in range(20):
        log.append(build_batch(make_records(5, timestamp_ms=1000 + i * 10), timestamp_ms=0), now_ms=NOW)
    assert log.offset_for_timestamp(0) == (0, 1000)
    assert log.offset_for_timestamp(1055) == (30, 1060)
    assert log.offset_for_timestamp(1190) == (95, 1190)
    assert log.offset_for_timestamp(1191) is None
    mixed = [make_records(1, timestamp_ms=t)[0] for t in (2000, 2010, 2005)]
    log.append(build_batch(mixed, timestamp_ms=0), now_ms=NOW)
    assert log.offset_for_timestamp(2008) == (101, 2010)
