"""Transactions in one partition (KIP-98): the last stable offset, the aborted-transaction index,
markers, and the epoch and state checks on the produce path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onceflow.broker.storage import (
    AbortedTransaction,
    ControlType,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    LogConfig,
    PartitionLog,
    SimpleRecord,
    build_batch,
    iter_batches,
)

NOW = 1_700_000_000_000
OpenLog = Callable[..., PartitionLog]
Producer = Callable[..., Any]
View = Callable[..., list[tuple[int, bytes | None]]]


def plain(log: PartitionLog, *values: bytes) -> int:
    """Append a non-idempotent batch; returns its base offset."""
    return log.append(build_batch([SimpleRecord(None, v) for v in values], timestamp_ms=NOW), now_ms=NOW).base_offset


def values(view: list[tuple[int, bytes | None]]) -> list[bytes | None]:
    return [v for _, v in view]


def test_commit_holds_the_lso_until_the_marker(
    open_log: OpenLog, producer: Producer, read_committed_view: View
) -> None:
    log = open_log()
    plain(log, b"p0")
    txn = producer(7)
    assert txn.send(log, b"t1", b"t2") == 1
    assert log.has_open_transaction(7)
    txn.send(log, b"t3")
    assert (log.last_stable_offset, log.high_watermark) == (1, 4)
    assert values(read_committed_view(log)) == [b"p0"]
    assert log.read_committed(1, 10**6) == (b"", [])
    assert txn.commit(log) == 4
    assert not log.has_open_transaction(7)
    assert log.last_stable_offset == log.high_watermark == 5
    assert values(read_committed_view(log)) == [b"p0", b"t1", b"t2", b"t3"]
    assert log.aborted_transactions(0, 5) == []


@pytest.mark.parametrize("fsync", ["interval", "always"])
def test_abort_is_indexed_and_filtered(
    open_log: OpenLog, log_dir: Path, producer: Producer, read_committed_view: View, fsync: str
) -> None:
    log = open_log(LogConfig(fsync=fsync))  # type: ignore[arg-type]
    plain(log, b"p0", b"p1")  # 0-1
    txn = producer(7)
    txn.send(log, b"a1", b"a2")  # 2-3
    txn.send(log, b"a3")  # 4
    assert txn.abort(log) == 5
    plain(log, b"p6")  # 6
    assert log.last_stable_offset == log.high_watermark == 7
    assert (log_dir / f"{0:020d}.txnindex").stat().st_size == 34
    hit = [AbortedTransaction(producer_id=7, first_offset=2)]
    for fetch, upper in [(0, 7), (0, 3), (2, 3), (4, 5), (5, 6), (3, 100)]:
        assert log.aborted_transactions(fetch, upper) == hit, (fetch, upper)
    for fetch, upper in [(0, 2), (6, 7), (0, 0), (4, 4)]:
        assert log.aborted_transactions(fetch, upper) == [], (fetch, upper)
    data, aborted = log.read_committed(0, 10**6)
    assert aborted == hit and [h.base_offset for _, h in iter_batches(data)] == [0, 2, 4, 5, 6]
    assert values(read_committed_view(log)) == [b"p0", b"p1", b"p6"]
    assert values(read_committed_view(log, max_bytes=1)) == [b"p0", b"p1", b"p6"]


def test_plain_writes_behind_an_open_transaction_wait_for_it(
    open_log: OpenLog, producer: Producer, read_committed_view: View
) -> None:
    log = open_log()
    txn = producer(7)
    txn.send(log, b"t0")  # 0
    plain(log, b"p1")  # 1
    producer(8).send(log, b"i2", transactional=False)  # 2: idempotent, not transactional
    assert log.last_stable_offset == 0 and read_committed_view(log) == []
    for _, header in iter_batches(log.read(0, 10**6, max_offset=log.last_stable_offset)):
        pytest.fail(f"batch {header.base_offset} returned at or beyond the LSO")
    txn.abort(log)
    assert read_committed_view(log) == [(1, b"p1"), (2, b"i2")]


def test_interleaved_transactions_of_two_producers(
    open_log: OpenLog, producer: Producer, read_committed_view: View
) -> None:
    log = open_log()
    a, b = producer(1), producer(2)
    b.send(log, b"b0")  # 0
    a.send(log, b"a1")  # 1
    b.send(log, b"b2")  # 2
    a.send(log, b"a3")  # 3
    assert log.last_stable_offset == 0
    a.abort(log)  # 4: b is still open, so LSO stays at 0
    assert log.last_stable_offset == 0
    entry = log.segments[-1].txn_index.entries[0]
    assert (entry.first_offset, entry.last_offset, entry.last_stable_offset) == (1, 4, 0)
    c = producer(3)
    c.send(log, b"c5")  # 5
    b.commit(log)  # 6
    assert log.last_stable_offset == 5
    assert read_committed_view(log) == [(0, b"b0"), (2, b"b2")]
    c.abort(log)  # 7
    assert log.last_stable_offset == 8
    assert log.aborted_transactions(0, 8) == [AbortedTransaction(1, 1), AbortedTransaction(3, 5)]
    assert log.aborted_transactions(5, 6) == [AbortedTransaction(3, 5)]
    assert read_committed_view(log) == [(0, b"b0"), (2, b"b2")]


def test_marker_without_an_open_transaction_changes_nothing(
    open_log: OpenLog, producer: Producer, read_committed_view: View
) -> None:
    log = open_log()
    txn = producer(7)
    txn.send(log, b"a")
    txn.abort(log)
    before = [list(s.txn_index.entries) for s in log.segments]
    assert txn.abort(log) == 2  # re-sent by a recovering coordinator
    assert txn.commit(log) == 3
    producer(99).abort(log)  # a producer never seen here
    assert [list(s.txn_index.entries) for s in log.segments] == before
    assert log.last_stable_offset == log.high_watermark == 5
    assert read_committed_view(log) == []
    assert txn.send(log, b"b") == 5  # the producer carries on with its sequence
    assert log.last_stable_offset == 5


def test_marker_epochs_and_fencing(open_log: OpenLog, producer: Producer) -> None:
    log = open_log()
    txn = producer(7, epoch=3)
    txn.send(log, b"a")
    with pytest.raises(InvalidProducerEpochError):
        txn.end(log, ControlType.ABORT, epoch=2)
    assert log.has_open_transaction(7) and log.log_end_offset == 1
    txn.end(log, ControlType.ABORT, epoch=4)  # the coordinator fenced the producer: bumped epoch
    assert not log.has_open_transaction(7)
    assert log.aborted_transactions(0, 2) == [AbortedTransaction(7, 0)]
    with pytest.raises(InvalidProducerEpochError):
        txn.send(log, b"zombie")  # the fenced instance, still at epoch 3
    assert log.log_end_offset == 2 and not log.has_open_transaction(7)
    successor = producer(7, epoch=4)
    successor.send(log, b"b")
    assert log.has_open_transaction(7) and log.last_stable_offset == 2


def test_transaction_state_checks_on_produce(open_log: OpenLog, producer: Producer) -> None:
    log = open_log()
    txn = producer(7)
    txn.send(log, b"a")
    with pytest.raises(InvalidTxnStateError):
        txn.send(log, b"plain", transactional=False)
    assert log.log_end_offset == 1
    bumped = producer(7, epoch=1)
    bumped.send(log, b"b")  # a newer epoch continues the open transaction (as Kafka does)
    assert log.last_stable_offset == 0
    bumped.abort(log)
    assert log.aborted_transactions(0, 3) == [AbortedTransaction(7, 0)]


def test_lso_is_a_batch_boundary_and_reads_stop_there(open_log: OpenLog, producer: Producer) -> None:
    log = open_log(LogConfig(index_interval_bytes=0))
    plain(log, b"p0", b"p1", b"p2")  # 0-2
    txn = producer(7)
    txn.send(log, b"t3", b"t4", b"t5")  # 3-5
    plain(log, b"p6", b"p7")  # 6-7
    lso = log.last_stable_offset
    assert lso == 3
    for fetch in range(lso):
        data = log.read(fetch, 10**6, max_offset=lso)
        assert max(h.last_offset for _, h in iter_batches(data)) < lso
    assert log.read(lso, 10**6, max_offset=lso) == b""
    assert log.read_committed(4, 10**6) == (b"", [])


def test_aborted_transaction_spanning_segments(
    open_log: OpenLog, log_dir: Path, producer: Producer, read_committed_view: View
) -> None:
    log = open_log(LogConfig(segment_bytes=400))
    txn = producer(7)
    first = txn.send(log, b"a" * 50)
    for i in range(10):
        plain(log, b"%d" % i * 40)
        txn.send(log, b"b" * 50)
    marker = txn.abort(log)
    assert len(log.segments) > 3
    marker_segment = next(s for s in log.segments if s.base_offset <= marker < s.next_offset)
    assert [e.last_offset for e in marker_segment.txn_index.entries] == [marker]
    assert sum(len(s.txn_index) for s in log.segments) == 1
    assert log.aborted_transactions(first, first + 1) == [AbortedTransaction(7, first)]
    assert log.aborted_transactions(log.segments[1].base_offset, marker) == [AbortedTransaction(7, first)]
    assert values(read_committed_view(log)) == [b"%d" % i * 40 for i in range(10)]
