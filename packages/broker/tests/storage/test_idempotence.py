"""Idempotent produce (KIP-98): duplicates, gaps, epochs, and the five-batch window."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from onceflow.broker.storage import (
    DuplicateSequenceError,
    InvalidProducerEpochError,
    LogConfig,
    OutOfOrderSequenceError,
    PartitionLog,
    SimpleRecord,
    build_batch,
)

NOW = 1_700_000_000_000
OpenLog = Callable[..., PartitionLog]
PID = 4242


def idem(seq: int, count: int = 3, *, epoch: int = 0, pid: int = PID) -> bytes:
    recs = [SimpleRecord(b"k", f"{seq}-{i}".encode()) for i in range(count)]
    return build_batch(recs, producer_id=pid, producer_epoch=epoch, base_sequence=seq, timestamp_ms=NOW)


def test_duplicate_retry_returns_original_offset_and_writes_nothing(open_log: OpenLog) -> None:
    log = open_log()
    log.append(build_batch([SimpleRecord(b"x", b"y")], timestamp_ms=NOW), now_ms=NOW)
    first = log.append(idem(0), now_ms=NOW)
    log.append(idem(3), now_ms=NOW)
    size = log.segments[-1].size
    with pytest.raises(DuplicateSequenceError) as info:
        log.append(idem(0), now_ms=NOW)
    assert info.value.base_offset == first.base_offset == 1
    assert info.value.log_append_time_ms == -1
    assert log.segments[-1].size == size and log.log_end_offset == 7


def test_duplicate_under_log_append_time_reports_original_time(open_log: OpenLog) -> None:
    log = open_log(LogConfig(message_timestamp_type="LogAppendTime"))
    log.append(idem(0), now_ms=NOW)
    with pytest.raises(DuplicateSequenceError) as info:
        log.append(idem(0), now_ms=NOW + 500)
    assert info.value.log_append_time_ms == NOW


def test_sequence_gap_is_out_of_order(open_log: OpenLog) -> None:
    log = open_log()
    log.append(idem(0), now_ms=NOW)
    with pytest.raises(OutOfOrderSequenceError, match="expected sequence 3"):
        log.append(idem(4), now_ms=NOW)
    log.append(idem(3), now_ms=NOW)


def test_stale_epoch_is_rejected_and_a_bump_resets_sequence(open_log: OpenLog) -> None:
    log = open_log()
    log.append(idem(0, epoch=1), now_ms=NOW)
    with pytest.raises(InvalidProducerEpochError):
        log.append(idem(3, epoch=0), now_ms=NOW)
    with pytest.raises(OutOfOrderSequenceError, match="new epoch"):
        log.append(idem(3, epoch=2), now_ms=NOW)
    log.append(idem(0, epoch=2), now_ms=NOW)
    log.append(idem(3, epoch=2), now_ms=NOW)
    entry = log.producer_state.entry(PID)
    assert entry is not None and entry.producer_epoch == 2 and entry.last_seq == 5


def test_only_the_last_five_batches_are_deduplicated(open_log: OpenLog) -> None:
    log = open_log()
    for seq in range(0, 18, 3):  # six batches
        log.append(idem(seq), now_ms=NOW)
    with pytest.raises(DuplicateSequenceError) as info:
        log.append(idem(3), now_ms=NOW)  # second batch: still cached
    assert info.value.base_offset == 3
    with pytest.raises(OutOfOrderSequenceError):
        log.append(idem(0), now_ms=NOW)  # first batch fell out of the window


def test_unknown_producer_is_accepted_with_any_sequence(open_log: OpenLog) -> None:
    log = open_log()
    info = log.append(idem(57, pid=77), now_ms=NOW)
    assert info.base_offset == 0
    log.append(idem(60, pid=77), now_ms=NOW)


def test_sequence_wraps_around_int32(open_log: OpenLog) -> None:
    log = open_log()
    log.append(idem(2**31 - 3, count=3), now_ms=NOW)
    log.append(idem(0), now_ms=NOW)


def test_failed_multi_batch_request_leaves_state_unchanged(open_log: OpenLog) -> None:
    log = open_log()
    with pytest.raises(OutOfOrderSequenceError):
        log.append(idem(0, pid=1) + idem(9, pid=1), now_ms=NOW)
    assert log.log_end_offset == 0 and log.producer_state.entry(1) is None
    log.append(idem(0, pid=1) + idem(3, pid=1), now_ms=NOW)
    assert log.log_end_offset == 6


def test_idle_producers_expire(open_log: OpenLog) -> None:
    log = open_log(LogConfig(producer_id_expiration_ms=1000))
    log.append(idem(0), now_ms=NOW)
    assert log.expire_producers(NOW + 999) == 0
    assert [e.producer_id for e in log.producer_state.active_producers()] == [PID]
    assert log.expire_producers(NOW + 1000) == 1
    assert log.producer_state.active_producers() == []
