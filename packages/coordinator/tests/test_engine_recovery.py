"""Recovery from the log after a restart, and fencing of a zombie instance (in-memory log)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from onceflow.contract import TransactionId, TransactionState
from onceflow.coordinator.engine import TwoPhaseCommitEngine
from onceflow.coordinator.engine.consistency import LogBehindParticipants
from onceflow.coordinator.exceptions import CoordinatorFenced, CoordinatorStopped
from onceflow.coordinator.log import MemoryLogStorage, MemoryTransactionLog
from onceflow.coordinator.model import JobState, Transaction
from onceflow.testing.coordinator import FakeParticipants, staged_files

JOB = "ipcount"
EngineFactory = Callable[..., TwoPhaseCommitEngine]


def _wait_state(engine: TwoPhaseCommitEngine, batch: int, state: TransactionState, timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while engine.get_transaction(JOB, batch).state is not state:
        assert time.monotonic() < deadline, engine.get_transaction(JOB, batch)
        time.sleep(0.01)


def _log_as_crashed_coordinator(storage: MemoryLogStorage, fakes: FakeParticipants, state: TransactionState) -> None:
    """Write what a coordinator that crashed in ``state`` left in the log."""
    log = MemoryTransactionLog(storage)
    log.open()
    job = JobState(JOB, epoch=1, writer_id="driver", last_committed_batch=-1, participants=tuple(fakes.refs))
    if state is TransactionState.COMMITTING:
        job = JobState(JOB, 1, "driver", 0, tuple(fakes.refs))
    txn = Transaction(
        id=TransactionId(JOB, 0),
        state=state,
        writer_epoch=1,
        files=tuple(staged_files(JOB, 0)),
        participants=tuple(fakes.refs),
        started_at=time.time(),
        updated_at=time.time(),
    )
    log.append([job, txn])


def test_committing_is_recommitted_after_restart(
    engine_factory: EngineFactory, storage: MemoryLogStorage, fakes: FakeParticipants
) -> None:
    first = engine_factory()
    epoch = first.register_writer(JOB, "driver").epoch
    first.register_participants(JOB, epoch, fakes.refs)
    fakes["sqlite"].fail_commits = 10**6
    assert first.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0)).state is TransactionState.COMMITTING
    first.close()  # the crash: the decision is logged, sqlite never acked

    fakes["sqlite"].fail_commits = 0
    second = engine_factory()
    _wait_state(second, 0, TransactionState.COMMITTED)
    txn = TransactionId(JOB, 0)
    assert fakes["sqlite"].committed == {txn: 1}
    # the participants that acked before the crash are asked again (commit is idempotent)
    assert fakes["kafka"].committed[txn] >= 1
    assert second.register_writer(JOB, "driver-2").last_committed_batch == 0


def test_recovery_of_each_state(
    engine_factory: EngineFactory, storage: MemoryLogStorage, fakes: FakeParticipants
) -> None:
    txn = TransactionId(JOB, 0)
    for state, final in [
        (TransactionState.COMMITTING, TransactionState.COMMITTED),
        (TransactionState.ABORTING, TransactionState.ABORTED),
        (TransactionState.PREPARING, TransactionState.ABORTED),
    ]:
        storage.entries.clear()
        for sink in fakes.sinks.values():  # a new world: a sink's commits past the log would refuse it
            sink.calls.clear()
            sink.committed.clear()
        _log_as_crashed_coordinator(storage, fakes, state)
        engine = engine_factory()
        _wait_state(engine, 0, final)
        for sink in fakes.sinks.values():
            expected = "commit" if final is TransactionState.COMMITTED else "abort"
            assert sink.count(expected, txn) == 1, (state, sink.name, sink.calls)
            assert sink.count("prepare") == 0
        if state is TransactionState.PREPARING:
            assert "presumed abort" in engine.get_transaction(JOB, 0).reason
        engine.close()


def test_recovery_report_counts(
    engine_factory: EngineFactory, storage: MemoryLogStorage, fakes: FakeParticipants
) -> None:
    _log_as_crashed_coordinator(storage, fakes, TransactionState.PREPARING)
    engine = TwoPhaseCommitEngine(MemoryTransactionLog(storage), fakes)
    report = engine.start()
    assert (report.presumed_aborted, report.aborting, report.committing, report.jobs) == (1, 0, 0, 1)
    engine.close()


def test_a_second_instance_fences_the_first(engine_factory: EngineFactory, fakes: FakeParticipants) -> None:
    zombie = engine_factory()
    epoch = zombie.register_writer(JOB, "driver").epoch
    zombie.register_participants(JOB, epoch, fakes.refs)
    successor = engine_factory()
    with pytest.raises(CoordinatorFenced):
        zombie.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0))
    assert zombie.stopped.is_set()
    with pytest.raises(CoordinatorStopped):
        zombie.get_transaction(JOB, 0)
    # the successor replayed the job and serves it
    assert successor.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0)).state is TransactionState.COMMITTED


def test_a_log_behind_the_sinks_commit_records_is_refused(
    engine_factory: EngineFactory, storage: MemoryLogStorage, fakes: FakeParticipants
) -> None:
    """A log that lost its tail (decisions the sinks already applied) is refused at take-over, before
    anything is presumed aborted; a participant that cannot tell is skipped, not waited for."""
    first = engine_factory()
    epoch = first.register_writer(JOB, "driver").epoch
    first.register_participants(JOB, epoch, fakes.refs)
    for batch in range(3):
        assert first.commit_transaction(JOB, epoch, batch, staged_files(JOB, batch)).state is TransactionState.COMMITTED
    first.close()

    fakes["kafka"].available = False  # cannot tell: skipped
    second = engine_factory()  # the whole log: consistent with every sink
    second.close()

    behind = MemoryLogStorage()
    behind.entries = storage.entries[:-4]  # batch 2 (PREPARING, COMMITTING + job state, COMMITTED) is gone
    with pytest.raises(LogBehindParticipants, match=r"sink 'sqlite' committed batch 2 of job 'ipcount'.*is 1"):
        TwoPhaseCommitEngine(MemoryTransactionLog(behind), fakes).start()


def test_a_zombie_does_not_presume_abort_from_its_stale_memory(
    engine_factory: EngineFactory, fakes: FakeParticipants
) -> None:
    """An instance that a newer one fenced must not answer ABORTED for a batch it never saw (the
    newer one may have committed it): it proves it still owns the log first, and stops."""
    zombie = engine_factory()
    epoch = zombie.register_writer(JOB, "driver").epoch
    zombie.register_participants(JOB, epoch, fakes.refs)
    successor = engine_factory()
    assert successor.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0)).state is TransactionState.COMMITTED
    with pytest.raises(CoordinatorFenced):
        zombie.get_transaction(JOB, 0)
    assert zombie.stopped.is_set()
    assert successor.get_transaction(JOB, 1).state is TransactionState.ABORTED  # the owner may presume abort


def test_close_waits_for_the_recovery_aborts_and_nothing_logs_after_it(
    storage: MemoryLogStorage, fakes: FakeParticipants, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 24: recovery's aborts outlived a closed engine and logged 'recovery.abort_failed ... the
    coordinator was closed' (with its traceback) into a later test's output."""
    _log_as_crashed_coordinator(storage, fakes, TransactionState.PREPARING)
    fakes["sqlite"].abort_delay = 0.5  # the abort is in flight when the engine closes
    engine = TwoPhaseCommitEngine(MemoryTransactionLog(storage), fakes)
    assert engine.start().presumed_aborted == 1
    engine.close()
    closed = len(caplog.records)
    assert not [t.name for t in threading.enumerate() if t.name == "recovery-aborts"], "an abort outlived close"
    time.sleep(0.5)  # as long as the abort's delay: a thread still running would have logged by now
    assert [r.getMessage() for r in caplog.records[closed:] if r.name.startswith("onceflow.coordinator")] == []
    assert not [r for r in caplog.records if r.getMessage() == "recovery.abort_failed"]
    # the abort stayed in the log: the next instance finishes it
    fakes["sqlite"].abort_delay = 0.0
    successor = TwoPhaseCommitEngine(MemoryTransactionLog(storage), fakes)
    successor.start()
    _wait_state(successor, 0, TransactionState.ABORTED)
    successor.close()
