"""Transactions across restarts, lost or damaged ``.txnindex`` files, retention and compaction."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onceflow.broker.storage import (
    AbortedTransaction,
    AbortedTxn,
    LogConfig,
    PartitionLog,
    SimpleRecord,
    build_batch,
)

NOW = 1_700_000_000_000
HOUR = 3_600_000
OpenLog = Callable[..., PartitionLog]
Producer = Callable[..., Any]
View = Callable[..., list[tuple[int, bytes | None]]]
SMALL = LogConfig(segment_bytes=600, index_interval_bytes=100)


def plain(log: PartitionLog, value: bytes, *, key: bytes | None = None, now_ms: int = NOW) -> int:
    batch = build_batch([SimpleRecord(key, value)], timestamp_ms=now_ms)
    return log.append(batch, now_ms=NOW).base_offset


def abandon(log: PartitionLog) -> None:
    """kill -9: drop the file descriptors, no snapshot, no fsync."""
    for segment in log.segments:
        segment.close()


def txn_indexes(log: PartitionLog) -> dict[int, list[AbortedTxn]]:
    return {s.base_offset: list(s.txn_index.entries) for s in log.segments}


def scenario(log: PartitionLog, producer: Producer) -> None:
    """Aborted and committed transactions over several segments; pid 3's transaction is left open."""
    p1, p2, p3 = producer(1), producer(2), producer(3)
    for round_ in range(4):
        p1.send(log, b"one-%d" % round_ * 10)
        plain(log, b"plain-%d" % round_ * 10)
        p2.send(log, b"two-%d" % round_ * 10)
        p1.abort(log) if round_ % 2 == 0 else p1.commit(log)
        p2.commit(log) if round_ % 2 == 0 else p2.abort(log)
    p3.send(log, b"open" * 10)
    plain(log, b"after-open")


def state(log: PartitionLog, view: View) -> tuple[object, ...]:
    open_pids = [pid for pid in (1, 2, 3) if log.has_open_transaction(pid)]
    return log.last_stable_offset, log.high_watermark, open_pids, txn_indexes(log), view(log)


@pytest.mark.parametrize("shutdown", ["clean", "kill", "kill_without_snapshots"])
def test_restart_restores_open_transactions_lso_and_index(
    open_log: OpenLog, log_dir: Path, producer: Producer, read_committed_view: View, shutdown: str
) -> None:
    log = open_log(SMALL)
    scenario(log, producer)
    assert len(log.segments) > 2 and sum(len(s.txn_index) for s in log.segments) == 4
    before = state(log, read_committed_view)
    if shutdown == "clean":
        log.close()
    else:
        abandon(log)
    if shutdown == "kill_without_snapshots":
        for snapshot in log_dir.glob("*.snapshot"):
            snapshot.unlink()
    log = open_log(SMALL)
    assert state(log, read_committed_view) == before
    assert log.has_open_transaction(3) and log.last_stable_offset < log.high_watermark
    producer(3).abort(log)  # the coordinator ends it after the restart
    assert log.last_stable_offset == log.high_watermark
    assert not any((v or b"").startswith(b"open") for _, v in read_committed_view(log))


def test_torn_tail_drops_the_marker_and_its_entry(
    open_log: OpenLog, log_dir: Path, producer: Producer, read_committed_view: View
) -> None:
    log = open_log()
    txn = producer(7)
    txn.send(log, b"a")
    plain(log, b"p")
    size = log.segments[-1].size
    txn.abort(log)
    abandon(log)
    os.truncate(sorted(log_dir.glob("*.log"))[-1], size + 20)  # the marker was torn
    log = open_log()
    assert log.log_end_offset == 2 and log.has_open_transaction(7) and log.last_stable_offset == 0
    assert log.aborted_transactions(0, 10) == [] and (log_dir / f"{0:020d}.txnindex").stat().st_size == 0
    assert txn.abort(log) == 2  # the coordinator retries
    assert log.aborted_transactions(0, 3) == [AbortedTransaction(7, 0)]
    assert read_committed_view(log) == [(1, b"p")]


def test_an_entry_lost_with_its_marker_on_disk_is_replayed(
    open_log: OpenLog, log_dir: Path, producer: Producer, read_committed_view: View
) -> None:
    log = open_log()
    txn = producer(7)
    txn.send(log, b"a")
    txn.abort(log)
    abandon(log)  # as if killed between writing the marker and its index entry
    (log_dir / f"{0:020d}.txnindex").write_bytes(b"")
    log = open_log()
    assert log.aborted_transactions(0, 2) == [AbortedTransaction(7, 0)]
    assert read_committed_view(log) == []


@pytest.mark.parametrize("damage", ["delete", "torn", "garbage"])
def test_damaged_txn_indexes_are_rebuilt(
    open_log: OpenLog, log_dir: Path, producer: Producer, read_committed_view: View, damage: str
) -> None:
    log = open_log(SMALL)
    scenario(log, producer)
    before = state(log, read_committed_view)
    log.close()
    for path in sorted(log_dir.glob("*.txnindex")):
        if damage == "delete":
            path.unlink()
        elif damage == "torn":
            path.write_bytes(path.read_bytes()[:-3] if path.stat().st_size else b"\x00")
        else:
            path.write_bytes(b"\xff" * 34)
    log = open_log(SMALL)
    assert state(log, read_committed_view) == before
    assert all(path.stat().st_size % 34 == 0 for path in log_dir.glob("*.txnindex"))
    log.close()
    assert state(open_log(SMALL), read_committed_view) == before


def test_retention_deletes_index_entries_with_their_segments(
    open_log: OpenLog, log_dir: Path, producer: Producer
) -> None:
    log = open_log(LogConfig(segment_ms=HOUR, retention_ms=2 * HOUR))
    txn = producer(7)
    for hour in range(4):
        txn.send(log, b"x", now_ms=NOW + hour * HOUR)
        txn.abort(log) if hour % 2 == 0 else txn.commit(log)
        plain(log, b"p", now_ms=NOW + hour * HOUR)
    assert log.aborted_transactions(0, 100) == [AbortedTransaction(7, 0), AbortedTransaction(7, 6)]
    assert len(list(log_dir.glob("*.txnindex"))) == len(log.segments) == 4
    assert log.apply_retention(NOW + 3 * HOUR) == 1
    assert log.log_start_offset == 3
    assert log.aborted_transactions(3, 100) == [AbortedTransaction(7, 6)]
    assert not (log_dir / f"{0:020d}.txnindex").exists()
    assert len(list(log_dir.glob("*.txnindex"))) == 3


def test_retention_past_an_open_transaction_keeps_the_lso_in_the_log(open_log: OpenLog, producer: Producer) -> None:
    log = open_log(LogConfig(segment_ms=HOUR, retention_ms=HOUR))
    producer(7).send(log, b"open")
    plain(log, b"later", now_ms=NOW + 5 * HOUR)
    plain(log, b"later", now_ms=NOW + 5 * HOUR)
    log.apply_retention(NOW + 5 * HOUR)
    assert log.log_start_offset == 1 and log.last_stable_offset == 1
    assert log.read_committed(1, 10**6) == (b"", [])


COMPACT = LogConfig(cleanup_policy=frozenset({"compact"}), segment_bytes=500)


def compaction_scenario(log: PartitionLog, producer: Producer) -> None:
    p1, p2 = producer(1), producer(2)
    for i in range(12):
        key = b"k%d" % (i % 3)
        plain(log, b"plain-%d" % i, key=key)
        p1.send(log, b"aborted-%d" % i)
        p2.send(log, b"committed-%d" % i)
        p1.abort(log)
        p2.commit(log)


def test_compaction_never_exposes_aborted_data(
    open_log: OpenLog, log_dir: Path, producer: Producer, read_committed_view: View
) -> None:
    log = open_log(COMPACT)
    compaction_scenario(log, producer)
    before = read_committed_view(log)
    aborted_before = log.aborted_transactions(0, log.log_end_offset)
    assert len(aborted_before) == 12
    stats = log.compact(NOW)
    assert stats.segments_cleaned > 0 and stats.records_removed > 0
    after = read_committed_view(log)
    assert not any(v is not None and v.startswith(b"aborted") for _, v in after)
    assert set(after) <= set(before)  # compaction only removes superseded keys
    assert log.aborted_transactions(0, log.log_end_offset) == aborted_before  # markers stay, entries stay
    log.close()
    for path in log_dir.glob("*.txnindex"):
        path.unlink()
    log = open_log(COMPACT)
    assert read_committed_view(log) == after


def test_crash_after_compaction_swap_rebuilds_the_merged_index(
    open_log: OpenLog, log_dir: Path, producer: Producer, read_committed_view: View
) -> None:
    log = open_log(COMPACT)
    compaction_scenario(log, producer)
    log.compact(NOW)
    after = read_committed_view(log)
    cleaned_base = log.segments[0].base_offset
    abandon(log)
    (log_dir / f"{cleaned_base:020d}.txnindex").unlink()  # crashed before writing it
    log = open_log(COMPACT)
    assert read_committed_view(log) == after
    assert (log_dir / f"{cleaned_base:020d}.txnindex").exists()
