"""Log compaction: latest value per key, tombstones, transactions, and crash safety."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from onceflow.broker.storage import (
    ControlType,
    DuplicateSequenceError,
    LogConfig,
    PartitionLog,
    SimpleRecord,
    build_batch,
    decode_records,
    iter_batches,
)

NOW = 1_700_000_000_000
DAY = 86_400_000
OpenLog = Callable[..., PartitionLog]
COMPACT = LogConfig(cleanup_policy=frozenset({"compact"}), segment_bytes=400, delete_retention_ms=DAY)


def put(key: str, value: str | None, ts: int = NOW, **kwargs: object) -> bytes:
    record = SimpleRecord(key.encode(), None if value is None else value.encode())
    return build_batch([record], timestamp_ms=ts, **kwargs)  # type: ignore[arg-type]


def all_records(log: PartitionLog) -> list[SimpleRecord]:
    out: list[SimpleRecord] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 10**9)
        for position, header in iter_batches(data):
            out += decode_records(data[position : position + header.size])
            offset = header.next_offset
    return out


def latest(log: PartitionLog) -> dict[bytes | None, tuple[int, bytes | None]]:
    return {r.key: (r.offset, r.value) for r in all_records(log)}


def fill(log: PartitionLog) -> None:
    for i in range(30):
        log.append(put(f"k{i % 4}", f"v{i}"), now_ms=NOW)


def test_keeps_latest_value_per_key_and_preserves_offsets(open_log: OpenLog) -> None:
    log = open_log(COMPACT)
    fill(log)
    before = latest(log)
    end = log.log_end_offset
    stats = log.compact(NOW)
    assert stats.records_removed > 0 and stats.bytes_after < stats.bytes_before
    assert latest(log) == before and log.log_end_offset == end
    records = all_records(log)
    offsets = [r.offset for r in records]
    assert offsets == sorted(offsets)
    cleaned_end = log.segments[-1].base_offset
    cleaned_keys = [r.key for r in records if r.offset < cleaned_end]
    assert len(cleaned_keys) == len(set(cleaned_keys))  # one record per key in the cleaned part


def test_tombstones_are_removed_after_delete_retention(open_log: OpenLog) -> None:
    log = open_log(COMPACT)
    log.append(put("gone", "x"), now_ms=NOW)
    log.append(put("gone", None), now_ms=NOW)
    fill(log)
    log.compact(NOW + 1000)
    assert latest(log)[b"gone"][1] is None  # tombstone still visible to consumers
    log.compact(NOW + DAY + 1)
    assert b"gone" not in latest(log)


def test_compaction_respects_min_compaction_lag(open_log: OpenLog) -> None:
    log = open_log(LogConfig(cleanup_policy=frozenset({"compact"}), segment_bytes=400, min_compaction_lag_ms=DAY))
    fill(log)
    assert log.compact(NOW + 1000).segments_cleaned == 0
    assert log.compact(NOW + DAY).segments_cleaned > 0


def test_aborted_transactions_are_dropped_and_markers_kept(open_log: OpenLog) -> None:
    log = open_log(COMPACT)
    txn = {"producer_id": 3, "producer_epoch": 0, "transactional": True}
    log.append(put("a", "aborted", base_sequence=0, **txn), now_ms=NOW)
    log.append_control(ControlType.ABORT, producer_id=3, producer_epoch=0, coordinator_epoch=0, now_ms=NOW)
    log.append(put("b", "committed", base_sequence=1, **txn), now_ms=NOW)
    log.append_control(ControlType.COMMIT, producer_id=3, producer_epoch=0, coordinator_epoch=0, now_ms=NOW)
    fill(log)
    log.compact(NOW)
    values = {r.key: r.value for r in all_records(log)}
    assert b"a" not in values and values[b"b"] == b"committed"
    control = [h for p, h in iter_batches(log.read(0, 10**6)) if h.is_control]
    assert [h.base_offset for h in control] == [1, 3]


def test_open_transaction_blocks_compaction_beyond_it(open_log: OpenLog) -> None:
    log = open_log(COMPACT)
    fill(log)
    log.append(put("t", "open", producer_id=8, producer_epoch=0, base_sequence=0, transactional=True), now_ms=NOW)
    fill(log)
    stats = log.compact(NOW)
    assert all(s.next_offset <= 30 for s in log.segments[: stats.segments_cleaned])
    assert log.last_stable_offset == 30


def test_producer_state_survives_compaction_and_restart(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log(COMPACT)
    log.append(put("k0", "idem", producer_id=9, producer_epoch=0, base_sequence=0), now_ms=NOW)
    fill(log)  # k0 is overwritten: the idempotent batch loses its only record
    log.compact(NOW)
    for segment in log.segments:
        segment.close()
    for snapshot in log_dir.glob("*.snapshot"):
        snapshot.unlink()
    log = open_log(COMPACT)
    with pytest.raises(DuplicateSequenceError) as info:
        log.append(put("k0", "idem", producer_id=9, producer_epoch=0, base_sequence=0), now_ms=NOW)
    assert info.value.base_offset == 0


def test_crash_before_swap_point_discards_cleaned_output(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log(COMPACT)
    fill(log)
    before = latest(log), log.log_end_offset, len(all_records(log))
    for segment in log.segments:
        segment.close()
    (log_dir / f"{0:020d}.log.cleaned").write_bytes(b"half written garbage")
    log = open_log(COMPACT)
    assert (latest(log), log.log_end_offset, len(all_records(log))) == before
    assert not list(log_dir.glob("*.cleaned"))


def test_crash_after_swap_point_completes_the_swap(open_log: OpenLog, log_dir: Path, tmp_path: Path) -> None:
    log = open_log(COMPACT)
    fill(log)
    before = latest(log), log.log_end_offset
    # Produce a genuine swap file by compacting a copy, then plant it next to the uncompacted original.
    for segment in log.segments:
        segment.close()
    copy_dir = tmp_path / "copy"
    shutil.copytree(log_dir, copy_dir)
    copy = PartitionLog.open(copy_dir, "events", 0, COMPACT, now_ms=NOW)
    copy.compact(NOW)
    compacted = sorted(p.name for p in copy_dir.glob("*.log"))
    first = copy.segments[0]
    shutil.copy(first.path, log_dir / f"{first.base_offset:020d}.log.swap")
    copy.close()
    (log_dir / f"{first.base_offset:020d}.log").unlink()  # crash after deleting one replaced segment
    log = open_log(COMPACT)
    assert (latest(log), log.log_end_offset) == before
    assert sorted(p.name for p in log_dir.glob("*.log")) == compacted
    assert not list(log_dir.glob("*.swap"))
