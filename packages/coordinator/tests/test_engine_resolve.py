"""Operator resolution: undecided transactions can be forced, decided ones never flipped."""

from __future__ import annotations

import threading
import time

import pytest

from onceflow.contract import Resolution, TransactionId, TransactionState
from onceflow.coordinator.engine import TwoPhaseCommitEngine
from onceflow.coordinator.exceptions import ResolutionRefused, TransactionDecided, UnknownJob
from onceflow.testing.coordinator import FakeParticipants, staged_files

JOB = "ipcount"


def test_abort_an_undecided_transaction(engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int) -> None:
    fakes["postgres"].prepare_delay = 0.5
    result = []
    thread = threading.Thread(
        target=lambda: result.append(engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0)))
    )
    thread.start()
    time.sleep(0.15)
    listed = engine.list_transactions(JOB, [TransactionState.PREPARING])
    assert [t.id.batch for t in listed] == [0]
    assert [v.prepared for v in listed[0].votes] == [True, True, False]  # votes show up as they arrive
    with pytest.raises(ResolutionRefused, match="postgres has not voted yes"):
        engine.resolve_transaction(JOB, 0, Resolution.COMMIT, "try")
    outcome = engine.resolve_transaction(JOB, 0, Resolution.ABORT, "postgres is stuck")
    assert outcome.state is TransactionState.ABORTED
    thread.join(5)
    assert result[0].state is TransactionState.ABORTED
    assert result[0].reason == "resolved by operator: postgres is stuck"
    assert all(sink.count("commit") == 0 for sink in fakes.sinks.values())
    assert fakes["kafka"].aborted == {TransactionId(JOB, 0): 1}


def test_decided_transactions_cannot_be_flipped(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int
) -> None:
    assert engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0)).state is TransactionState.COMMITTED
    with pytest.raises(TransactionDecided, match="is COMMITTED, a decided outcome; it cannot be made to abort"):
        engine.resolve_transaction(JOB, 0, Resolution.ABORT, "oops")
    assert engine.resolve_transaction(JOB, 0, Resolution.COMMIT, "").state is TransactionState.COMMITTED

    fakes["kafka"].vote_no = "no"
    assert engine.commit_transaction(JOB, epoch, 1, staged_files(JOB, 1)).state is TransactionState.ABORTED
    with pytest.raises(TransactionDecided):
        engine.resolve_transaction(JOB, 1, Resolution.COMMIT, "force")
    assert engine.resolve_transaction(JOB, 1, Resolution.ABORT, "").state is TransactionState.ABORTED


def test_commit_resolution_kicks_a_stuck_delivery(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int
) -> None:
    fakes["sqlite"].fail_commits = 10**6
    assert engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0)).state is TransactionState.COMMITTING
    with pytest.raises(TransactionDecided, match="COMMITTING"):
        engine.resolve_transaction(JOB, 0, Resolution.ABORT, "give up")
    fakes["sqlite"].fail_commits = 0
    assert engine.resolve_transaction(JOB, 0, Resolution.COMMIT, "sqlite is back").state is TransactionState.COMMITTED


def test_unknown_transactions(engine: TwoPhaseCommitEngine, epoch: int) -> None:
    with pytest.raises(TransactionDecided, match="presumed aborted"):
        engine.resolve_transaction(JOB, 9, Resolution.COMMIT, "")
    outcome = engine.resolve_transaction(JOB, 9, Resolution.ABORT, "cleanup")
    assert outcome.state is TransactionState.ABORTED
    assert engine.get_transaction(JOB, 9).reason == "resolved by operator: cleanup"
    with pytest.raises(UnknownJob):
        engine.resolve_transaction("other", 0, Resolution.ABORT, "")
