"""Segment rolling and delete-policy retention."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from onceflow.broker.storage import LogConfig, OffsetOutOfRangeError, PartitionLog, SimpleRecord, build_batch

NOW = 1_700_000_000_000
HOUR = 3_600_000
OpenLog = Callable[..., PartitionLog]


def sized_batch(timestamp_ms: int = NOW, count: int = 5) -> bytes:
    return build_batch([SimpleRecord(b"k", b"v" * 80)] * count, timestamp_ms=timestamp_ms)


def test_segments_roll_by_size_with_kafka_file_names(open_log: OpenLog, log_dir: Path) -> None:
    raw = sized_batch()
    log = open_log(LogConfig(segment_bytes=len(raw) * 3))
    for _ in range(10):
        log.append(raw, now_ms=NOW)
    assert [s.base_offset for s in log.segments] == [0, 15, 30, 45]
    assert all(s.size <= len(raw) * 3 for s in log.segments)
    assert sorted(p.name for p in log_dir.glob("*.log"))[1] == "00000000000000000015.log"
    assert sorted(p.name for p in log_dir.glob("*.snapshot")) == [f"{o:020d}.snapshot" for o in (30, 45)]
    assert log.read(17, 10**6)[:8] == (15).to_bytes(8, "big")


def test_segments_roll_by_time(open_log: OpenLog) -> None:
    log = open_log(LogConfig(segment_ms=HOUR))
    log.append(sized_batch(NOW), now_ms=NOW)
    log.append(sized_batch(NOW + HOUR - 1), now_ms=NOW)
    log.append(sized_batch(NOW + HOUR), now_ms=NOW)
    assert [s.base_offset for s in log.segments] == [0, 10]


def test_retention_by_time_deletes_old_segments_and_moves_log_start(open_log: OpenLog) -> None:
    log = open_log(LogConfig(segment_ms=HOUR, retention_ms=5 * HOUR))
    for hour in range(10):
        log.append(sized_batch(NOW + hour * HOUR), now_ms=NOW)
    assert len(log.segments) == 10
    assert log.apply_retention(NOW + 9 * HOUR) == 4  # hours 0-3 are more than 5h old
    assert log.log_start_offset == 20
    with pytest.raises(OffsetOutOfRangeError):
        log.read(19, 1000)
    assert log.read(20, 10**6)
    assert log.apply_retention(NOW + 100 * HOUR) == 5 and len(log.segments) == 1  # never the active one


def test_retention_by_bytes(open_log: OpenLog) -> None:
    raw = sized_batch()
    log = open_log(LogConfig(segment_bytes=len(raw) * 2, retention_bytes=len(raw) * 5))
    for _ in range(10):
        log.append(raw, now_ms=NOW)
    assert log.apply_retention(NOW) == 2
    assert log.size_bytes <= len(raw) * 6 and log.log_start_offset == 20


def test_retention_ignored_for_compact_only_topics(open_log: OpenLog) -> None:
    log = open_log(LogConfig(segment_ms=HOUR, retention_ms=1, cleanup_policy=frozenset({"compact"})))
    for hour in range(3):
        log.append(sized_batch(NOW + hour * HOUR), now_ms=NOW)
    assert log.apply_retention(NOW + 100 * HOUR) == 0


def test_reopen_after_retention_keeps_log_start(open_log: OpenLog) -> None:
    config = LogConfig(segment_ms=HOUR, retention_ms=HOUR)
    log = open_log(config)
    for hour in range(4):
        log.append(sized_batch(NOW + hour * HOUR), now_ms=NOW)
    log.apply_retention(NOW + 4 * HOUR)
    start, end = log.log_start_offset, log.log_end_offset
    log.close()
    log = open_log(config)
    assert (log.log_start_offset, log.log_end_offset) == (start, end)
