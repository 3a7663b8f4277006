"""The transaction state manager on its own: prepare, append, apply, and nothing else."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest

from onceflow.contract import ParticipantRef, ParticipantVote, TransactionId, TransactionState
from onceflow.coordinator.engine import TransactionStateManager
from onceflow.coordinator.engine.transitions import Begun, check_transition
from onceflow.coordinator.exceptions import (
    CoordinatorStopped,
    InvalidTransition,
    LogAppendRejected,
    TransactionLogError,
)
from onceflow.coordinator.log import MemoryLogStorage, MemoryTransactionLog
from onceflow.coordinator.log.records import LogRecord, decode
from onceflow.coordinator.model import Transaction
from onceflow.testing.coordinator import staged_files

JOB = "ipcount"
REFS = (ParticipantRef("kafka", "localhost:1"), ParticipantRef("sqlite", "localhost:2"))


def opened(storage: MemoryLogStorage) -> TransactionStateManager:
    state = TransactionStateManager(MemoryTransactionLog(storage))
    state.replay()
    return state


def begun(state: TransactionStateManager, batch: int = 0) -> Transaction:
    epoch = state.register_writer(JOB, "driver-1").epoch
    state.set_participants(JOB, epoch, REFS)
    admission = state.begin(TransactionId(JOB, batch), epoch, tuple(staged_files(JOB, batch)), log_preparing=True)
    assert isinstance(admission, Begun)
    return admission.txn


def test_each_decision_is_logged_before_it_is_applied_and_replays_the_same() -> None:
    storage = MemoryLogStorage()
    state = opened(storage)
    attempt = begun(state)
    yes = tuple(ParticipantVote(ref.sink, prepared=True) for ref in REFS)
    decided = state.decide(attempt, yes, [])
    assert isinstance(decided, Transaction) and decided.state is TransactionState.COMMITTING
    acked = tuple(dataclasses.replace(vote, acknowledged=True) for vote in yes)
    committed = dataclasses.replace(decided, state=TransactionState.COMMITTED, votes=acked)
    assert state.complete_commit(committed, retain_batches=10) == 0
    assert state.flush_queued()
    logged = [decode(key, value) for key, value in storage.entries]
    states = [record.state for record in logged if isinstance(record, Transaction)]
    assert states == [TransactionState.PREPARING, TransactionState.COMMITTING, TransactionState.COMMITTED]
    restarted = opened(storage)
    assert restarted.txn(attempt.id) == state.txn(attempt.id)
    assert restarted.job(JOB) == state.job(JOB)
    assert restarted.in_doubt() == []


def test_a_transition_that_no_longer_applies_logs_nothing() -> None:
    storage = MemoryLogStorage()
    state = opened(storage)
    attempt = begun(state)
    records = len(storage.entries)
    # the attempt is PREPARING, not COMMITTING: COMMITTED cannot be logged for it
    assert state.complete_commit(dataclasses.replace(attempt, state=TransactionState.COMMITTED), 0) is None
    assert (
        state.complete_abort(dataclasses.replace(attempt, state=TransactionState.ABORTED)) is TransactionState.PREPARING
    )
    assert len(storage.entries) == records
    assert state.in_doubt() == [attempt]


def test_the_state_machine_refuses_to_flip_a_decision() -> None:
    txn = Transaction(TransactionId(JOB, 0), TransactionState.COMMITTED, 1, (), REFS)
    with pytest.raises(InvalidTransition, match="COMMITTED cannot move to ABORTING"):
        check_transition(txn, dataclasses.replace(txn, state=TransactionState.ABORTING))


def test_a_failed_append_changes_nothing_and_stops_the_manager_for_good() -> None:
    storage = MemoryLogStorage()
    state = opened(storage)
    storage.fail_next_append = TransactionLogError("the broker is gone")
    with pytest.raises(TransactionLogError):
        state.register_writer(JOB, "driver-1")
    assert state.job(JOB) is None
    assert state.stopped.is_set()
    assert isinstance(state.failure, TransactionLogError)
    with pytest.raises(CoordinatorStopped):
        state.register_writer(JOB, "driver-1")
    assert storage.entries == []


def committing(state: TransactionStateManager, batch: int) -> Transaction:
    """Batch ``batch`` decided COMMITTING: two appends (PREPARING, COMMITTING), after registering the
    job's writer once."""
    job = state.job(JOB)
    if job is None:
        epoch = state.register_writer(JOB, "driver-1").epoch
        state.set_participants(JOB, epoch, REFS)
    else:
        epoch = job.epoch
    admission = state.begin(TransactionId(JOB, batch), epoch, tuple(staged_files(JOB, batch)), log_preparing=True)
    assert isinstance(admission, Begun)
    assert state.flush_queued()  # as the engine does while the Prepare calls are out
    yes = tuple(ParticipantVote(ref.sink, prepared=True) for ref in REFS)
    decided = state.decide(admission.txn, yes, [])
    assert isinstance(decided, Transaction) and decided.state is TransactionState.COMMITTING
    return decided


def ended(txn: Transaction) -> Transaction:
    acked = tuple(ParticipantVote(vote.sink, prepared=True, acknowledged=True) for vote in txn.votes)
    return dataclasses.replace(txn, state=TransactionState.COMMITTED, votes=acked)


def states_logged(storage: MemoryLogStorage) -> list[tuple[int, TransactionState]]:
    decoded = (decode(key, value) for key, value in storage.entries)
    return [(record.id.batch, record.state) for record in decoded if isinstance(record, Transaction)]


def test_end_rides_in_the_next_append() -> None:
    storage = MemoryLogStorage()
    state = opened(storage)
    first = committing(state, 0)
    assert state.complete_commit(ended(first), retain_batches=0) == 0
    assert state.complete_commit(ended(first), retain_batches=0) is None  # once
    # every participant committed: memory says so at once, the log with the next append
    assert state.lookup(first.id).state is TransactionState.COMMITTED
    assert states_logged(storage)[-1] == (0, TransactionState.COMMITTING)

    appends = storage.appends
    committing(state, 1)  # the next batch's PREPARING append carries batch 0's END
    assert storage.appends == appends + 2  # PREPARING (with END) and COMMITTING of batch 1: no third
    assert states_logged(storage)[-3:] == [
        (0, TransactionState.COMMITTED),
        (1, TransactionState.PREPARING),
        (1, TransactionState.COMMITTING),
    ]
    assert state.flush_queued(linger=0.01)  # nothing left to write
    assert storage.appends == appends + 2


def test_end_is_written_alone_after_its_linger_or_at_close_but_never_by_a_stopped_manager() -> None:
    storage = MemoryLogStorage()
    state = opened(storage)
    state.complete_commit(ended(committing(state, 0)), retain_batches=0)
    assert state.flush_queued(linger=0.01)
    assert states_logged(storage)[-1] == (0, TransactionState.COMMITTED)

    state.complete_commit(ended(committing(state, 1)), retain_batches=0)
    state.close()  # a clean shutdown writes what is queued
    assert states_logged(storage)[-1] == (1, TransactionState.COMMITTED)
    assert not state.flush_queued()

    closing = opened(storage)
    closing.complete_commit(ended(committing(closing, 2)), retain_batches=0)
    storage.fail_next_append = TransactionLogError("the broker went away")
    closing.close()  # best effort: a close that cannot write END still closes
    assert isinstance(closing.failure, TransactionLogError)
    with pytest.raises(CoordinatorStopped):
        closing.check_alive()

    restarted = opened(storage)
    assert restarted.lookup(TransactionId(JOB, 2)).state is TransactionState.COMMITTING
    restarted.complete_commit(ended(committing(restarted, 3)), retain_batches=0)
    storage.fail_next_append = TransactionLogError("the broker went away")
    with pytest.raises(TransactionLogError):
        restarted.flush_queued()
    assert not restarted.flush_queued()  # failed for good: the next instance delivers Commit again
    again = opened(storage)
    assert again.lookup(TransactionId(JOB, 3)).state is TransactionState.COMMITTING
    assert sorted(txn.id.batch for txn in again.in_doubt()) == [2, 3]


def test_a_request_that_the_queued_records_make_too_large_is_retried_without_them() -> None:
    storage = MemoryLogStorage()
    state = opened(storage)
    state.complete_commit(ended(committing(state, 0)), retain_batches=0)
    epoch = state.job(JOB).epoch  # type: ignore[union-attr]
    admission = state.begin(TransactionId(JOB, 1), epoch, tuple(staged_files(JOB, 1)), log_preparing=True)
    assert isinstance(admission, Begun)
    appends = storage.appends
    storage.fail_next_append = LogAppendRejected("too large")  # the queue pushed the decision over the limit
    yes = tuple(ParticipantVote(ref.sink, prepared=True) for ref in REFS)
    assert isinstance(state.decide(admission.txn, yes, []), Transaction)
    assert storage.appends == appends + 2  # END and PREPARING alone, then COMMITTING of batch 1
    assert state.lookup(TransactionId(JOB, 0)).state is TransactionState.COMMITTED
    assert states_logged(storage)[-3:] == [
        (0, TransactionState.COMMITTED),
        (1, TransactionState.PREPARING),
        (1, TransactionState.COMMITTING),
    ]


def test_preparing_is_applied_at_once_and_written_by_the_flush_or_with_the_decision() -> None:
    """PREPARING is not a decision: the attempt is in memory (ListTransactions) at once, and its record
    is queued. The engine's flush writes it while the Prepare calls are out; if the decision comes
    first, one append holds both, PREPARING first."""
    storage = MemoryLogStorage()
    state = opened(storage)
    attempt = begun(state, 0)
    assert state.in_doubt() == [attempt]
    assert states_logged(storage) == []
    assert state.flush_queued()
    assert states_logged(storage) == [(0, TransactionState.PREPARING)]

    epoch = state.job(JOB).epoch  # type: ignore[union-attr]
    admission = state.begin(TransactionId(JOB, 1), epoch, tuple(staged_files(JOB, 1)), log_preparing=True)
    assert isinstance(admission, Begun)
    appends = storage.appends
    yes = tuple(ParticipantVote(ref.sink, prepared=True) for ref in REFS)
    assert isinstance(state.decide(admission.txn, yes, []), Transaction)
    assert storage.appends == appends + 1
    assert states_logged(storage)[-2:] == [(1, TransactionState.PREPARING), (1, TransactionState.COMMITTING)]
    assert opened(storage).txn(admission.txn.id).state is TransactionState.COMMITTING  # type: ignore[union-attr]


class _RefusingPreparing(MemoryTransactionLog):
    """A log that refuses every append holding a PREPARING record (as a broker with a smaller
    ``max.message.bytes`` than the coordinator's own bound would), and nothing else."""

    def append(self, records: Sequence[LogRecord]) -> None:
        if any(isinstance(r, Transaction) and r.state is TransactionState.PREPARING for r in records):
            raise LogAppendRejected("the broker refused the records: too large")
        super().append(records)


def test_a_queued_record_the_log_refuses_is_dropped_and_the_decision_is_still_logged() -> None:
    """Without PREPARING a restart presumes the attempt aborted anyway; the decision must not fail
    for it, and the queue must not hold it for every later append."""
    storage = MemoryLogStorage()
    state = TransactionStateManager(_RefusingPreparing(storage))
    state.replay()
    attempt = begun(state, 0)
    yes = tuple(ParticipantVote(ref.sink, prepared=True) for ref in REFS)
    decided = state.decide(attempt, yes, [])
    assert isinstance(decided, Transaction) and decided.state is TransactionState.COMMITTING
    assert states_logged(storage) == [(0, TransactionState.COMMITTING)]

    epoch = state.job(JOB).epoch  # type: ignore[union-attr]
    state.begin(TransactionId(JOB, 1), epoch, tuple(staged_files(JOB, 1)), log_preparing=True)
    assert state.flush_queued()  # refused alone: dropped, the manager still serves
    assert state.failure is None
    state.register_writer(JOB, "driver-2")  # the next append does not carry it
    assert states_logged(storage) == [(0, TransactionState.COMMITTING)]
    restarted = opened(storage)
    assert restarted.txn(attempt.id).state is TransactionState.COMMITTING  # type: ignore[union-attr]
    assert restarted.lookup(TransactionId(JOB, 1)).state is TransactionState.ABORTED  # presumed


def test_an_attempt_no_append_could_take_is_refused_before_anything_is_sent() -> None:
    class Bounded(MemoryTransactionLog):
        def check_append(self, records: Sequence[LogRecord]) -> None:
            raise LogAppendRejected("the log records are 2000000 bytes, more than the 900000 one append takes")

    state = TransactionStateManager(Bounded(MemoryLogStorage()))
    state.replay()
    epoch = state.register_writer(JOB, "driver-1").epoch
    state.set_participants(JOB, epoch, REFS)
    with pytest.raises(LogAppendRejected, match="more than the 900000"):
        state.begin(TransactionId(JOB, 0), epoch, tuple(staged_files(JOB, 0)), log_preparing=True)
    assert state.in_doubt() == []
    assert state.failure is None
