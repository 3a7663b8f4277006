"""The transaction state manager on its own: prepare, append, apply, and nothing else."""

from __future__ import annotations

import dataclasses

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
from onceflow.coordinator.log.records import decode
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


def test_each_transition_is_logged_before_it_is_applied_and_replays_the_same() -> None:
    storage = MemoryLogStorage()
    state = opened(storage)
    attempt = begun(state)
    yes = tuple(ParticipantVote(ref.sink, prepared=True) for ref in REFS)
    decided = state.decide(attempt, yes, [])
    assert isinstance(decided, Transaction) and decided.state is TransactionState.COMMITTING
    acked = tuple(dataclasses.replace(vote, acknowledged=True) for vote in yes)
    committed = dataclasses.replace(decided, state=TransactionState.COMMITTED, votes=acked)
    assert state.complete_commit(committed, retain_batches=10) == 0
    assert state.flush_ended()
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
    assert state.flush_ended(linger=0.01)  # nothing left to write
    assert storage.appends == appends + 2


def test_end_is_written_alone_after_its_linger_or_at_close_but_never_by_a_stopped_manager() -> None:
    storage = MemoryLogStorage()
    state = opened(storage)
    state.complete_commit(ended(committing(state, 0)), retain_batches=0)
    assert state.flush_ended(linger=0.01)
    assert states_logged(storage)[-1] == (0, TransactionState.COMMITTED)

    state.complete_commit(ended(committing(state, 1)), retain_batches=0)
    state.close()  # a clean shutdown writes what is queued
    assert states_logged(storage)[-1] == (1, TransactionState.COMMITTED)
    assert not state.flush_ended()

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
        restarted.flush_ended()
    assert not restarted.flush_ended()  # failed for good: the next instance delivers Commit again
    again = opened(storage)
    assert again.lookup(TransactionId(JOB, 3)).state is TransactionState.COMMITTING
    assert sorted(txn.id.batch for txn in again.in_doubt()) == [2, 3]


def test_a_request_that_the_queued_end_makes_too_large_is_retried_without_it() -> None:
    storage = MemoryLogStorage()
    state = opened(storage)
    state.complete_commit(ended(committing(state, 0)), retain_batches=0)
    appends = storage.appends
    storage.fail_next_append = LogAppendRejected("too large")  # END pushed the append over the limit
    committing(state, 1)
    assert storage.appends == appends + 3  # END alone, then PREPARING and COMMITTING of batch 1
    assert state.lookup(TransactionId(JOB, 0)).state is TransactionState.COMMITTED
    assert states_logged(storage)[-3:] == [
        (0, TransactionState.COMMITTED),
        (1, TransactionState.PREPARING),
        (1, TransactionState.COMMITTING),
    ]
