"""The transaction state manager on its own: prepare, append, apply, and nothing else."""

from __future__ import annotations

import dataclasses

import pytest

from onceflow.contract import ParticipantRef, ParticipantVote, TransactionId, TransactionState
from onceflow.coordinator.engine import TransactionStateManager
from onceflow.coordinator.engine.transitions import Begun, check_transition
from onceflow.coordinator.exceptions import CoordinatorStopped, InvalidTransition, TransactionLogError
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
