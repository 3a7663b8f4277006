"""Presumed-abort 2PC in the engine: in-memory log, in-process fake participants."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

import pytest

from onceflow.contract import TransactionId, TransactionState
from onceflow.contract.staging import StagedFile
from onceflow.coordinator.engine import TwoPhaseCommitEngine
from onceflow.coordinator.exceptions import InvalidRequest, NoParticipants, UnknownEpoch, UnknownJob
from onceflow.coordinator.log import MemoryLogStorage
from onceflow.core.errors import WriterFenced
from onceflow.testing.coordinator import FAST_ENGINE_CONFIG, FakeParticipants, staged_files

JOB = "ipcount"
EngineFactory = Callable[..., TwoPhaseCommitEngine]
COMMITTED = TransactionState.COMMITTED
ABORTED = TransactionState.ABORTED


def test_happy_path_prepares_then_commits_everywhere(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int
) -> None:
    outcome = engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0))
    assert outcome.state is COMMITTED
    txn = TransactionId(JOB, 0)
    for sink in fakes.sinks.values():
        assert sink.count("prepare", txn) == 1
        assert sink.committed == {txn: 1}
        assert sink.calls.index(("prepare", txn)) < sink.calls.index(("commit", txn))
    record = engine.get_transaction(JOB, 0)
    assert record.state is COMMITTED
    assert all(v.prepared and v.acknowledged for v in record.votes)
    assert engine.register_writer(JOB, "driver-2").last_committed_batch == 0
    assert engine.metrics.transactions.labels("committed")._value.get() == 1


def test_a_no_vote_aborts_everywhere_with_a_reason_naming_the_participant(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int
) -> None:
    fakes["postgres"].vote_no = "checksum mismatch for part-1"
    outcome = engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0))
    assert outcome.state is ABORTED
    assert outcome.reason == "participant 'postgres' voted no: checksum mismatch for part-1"
    txn = TransactionId(JOB, 0)
    for sink in fakes.sinks.values():
        assert sink.count("commit") == 0
        assert sink.aborted == {txn: 1}
        assert txn not in sink.prepared
    assert engine.get_transaction(JOB, 0).state is ABORTED


def test_a_prepare_timeout_aborts(engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int) -> None:
    fakes["sqlite"].prepare_delay = 3.0  # prepare_timeout is 1 s
    started = time.monotonic()
    outcome = engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0))
    assert time.monotonic() - started < 2.5
    assert outcome.state is ABORTED
    assert "participant 'sqlite' did not vote: no answer to Prepare within 1s" in outcome.reason
    assert fakes["kafka"].aborted and fakes["postgres"].aborted


def test_an_unavailable_participant_counts_as_a_no_vote(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int
) -> None:
    fakes["kafka"].available = False
    outcome = engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0))
    assert outcome.state is ABORTED
    assert "participant 'kafka' did not vote" in outcome.reason and "fake sink is down" in outcome.reason


def test_commit_is_retried_with_backoff_until_the_participant_comes_back(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int
) -> None:
    postgres = fakes["postgres"]
    postgres.fail_commits = 10**6  # down for commits after voting yes
    outcome = engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0))
    # the caller waited commit_wait (2 s) and got the durable decision
    assert outcome.state is TransactionState.COMMITTING
    txn = TransactionId(JOB, 0)
    record = engine.get_transaction(JOB, 0)
    assert [v.acknowledged for v in record.votes] == [True, True, False]
    assert "fake sink failed this commit" in record.votes[2].error
    retries = postgres.count("commit", txn)
    assert 4 <= retries < 60, retries  # backoff 20 ms doubling to 200 ms over 2 s
    assert engine.state.in_doubt_count() == 1
    postgres.fail_commits = 0  # it comes back
    assert postgres.wait_for("committed", txn, timeout=5)
    deadline = time.monotonic() + 5
    while engine.get_transaction(JOB, 0).state is not COMMITTED and time.monotonic() < deadline:
        time.sleep(0.01)
    assert engine.get_transaction(JOB, 0).state is COMMITTED
    assert fakes["kafka"].committed == {txn: 1}  # acked participants are not asked again
    assert engine.state.in_doubt_count() == 0
    assert engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0)).state is COMMITTED


def test_a_duplicate_commit_changes_nothing(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants, storage: MemoryLogStorage, epoch: int
) -> None:
    assert engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0)).state is COMMITTED
    records = len(storage.entries)
    again = engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0, files=3))
    assert again.state is COMMITTED
    assert len(storage.entries) == records
    for sink in fakes.sinks.values():
        assert sink.count("prepare") == 1 and sink.count("commit") == 1


def test_a_duplicate_while_in_flight_joins_the_attempt(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int
) -> None:
    fakes["kafka"].prepare_delay = 0.3
    outcomes = []

    def commit() -> None:
        outcomes.append(engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0)).state)

    threads = [threading.Thread(target=commit) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert outcomes == [COMMITTED] * 4
    assert fakes["kafka"].count("prepare") == 1
    assert fakes["sqlite"].count("commit") == 1


def test_an_aborted_batch_can_be_retried_as_a_new_attempt(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int
) -> None:
    fakes["sqlite"].vote_no = "disk full"
    assert engine.commit_transaction(JOB, epoch, 3, staged_files(JOB, 3)).state is ABORTED
    fakes["sqlite"].vote_no = None
    assert engine.commit_transaction(JOB, epoch, 3, staged_files(JOB, 3)).state is COMMITTED
    record = engine.get_transaction(JOB, 3)
    assert (record.state, record.attempt) == (COMMITTED, 2)


def test_an_older_writer_is_fenced(engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int) -> None:
    newer = engine.register_writer(JOB, "driver-2").epoch
    assert newer == epoch + 1
    with pytest.raises(WriterFenced, match="another writer owns the job"):
        engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0))
    with pytest.raises(WriterFenced):
        engine.register_participants(JOB, epoch, fakes.refs)
    with pytest.raises(WriterFenced):
        engine.abort_transaction(JOB, epoch, 0, "stop")
    with pytest.raises(UnknownEpoch):
        engine.commit_transaction(JOB, newer + 1, 0, staged_files(JOB, 0))
    assert engine.commit_transaction(JOB, newer, 0, staged_files(JOB, 0)).state is COMMITTED
    assert fakes["kafka"].count("prepare") == 1


def test_a_writer_fenced_during_prepare_cannot_commit(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int
) -> None:
    fakes["kafka"].prepare_delay = 0.3
    result: list[BaseException] = []

    def commit() -> None:
        try:
            engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0))
        except WriterFenced as exc:
            result.append(exc)

    thread = threading.Thread(target=commit)
    thread.start()
    time.sleep(0.1)
    newer = engine.register_writer(JOB, "driver-2").epoch
    thread.join(5)
    # The fenced writer is told it is fenced (so it stops instead of re-running the batch) ...
    assert isinstance(result[0], WriterFenced), result
    assert f"epoch {newer}" in str(result[0])
    # ... and the attempt it started was aborted, naming why.
    aborted = engine.get_transaction(JOB, 0)
    assert aborted.state is ABORTED
    assert f"writer epoch {epoch} was fenced by epoch {newer}" in aborted.reason
    fakes["kafka"].prepare_delay = 0
    assert engine.commit_transaction(JOB, newer, 0, staged_files(JOB, 0)).state is COMMITTED


def test_unknown_transactions_are_presumed_aborted(engine: TwoPhaseCommitEngine, epoch: int) -> None:
    assert engine.get_transaction(JOB, 77).state is ABORTED
    assert engine.get_transaction("never-registered", 0).state is ABORTED
    assert "presumed aborted" in engine.get_transaction(JOB, 77).reason


def test_batches_older_than_the_last_committed_are_presumed_aborted(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int
) -> None:
    assert engine.commit_transaction(JOB, epoch, 5, staged_files(JOB, 5)).state is COMMITTED
    old = engine.commit_transaction(JOB, epoch, 4, staged_files(JOB, 4))
    assert old.state is ABORTED
    assert "older than the last committed batch 5" in old.reason
    assert fakes["kafka"].count("prepare") == 1


def test_the_writer_aborts_an_undecided_transaction(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int
) -> None:
    fakes["postgres"].prepare_delay = 0.4
    result = []
    thread = threading.Thread(
        target=lambda: result.append(engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0)))
    )
    thread.start()
    time.sleep(0.1)
    assert engine.abort_transaction(JOB, epoch, 0, "task failed").state is ABORTED
    thread.join(5)
    assert result[0].state is ABORTED
    assert "aborted by the writer" in result[0].reason
    assert all(sink.count("commit") == 0 for sink in fakes.sinks.values())
    assert fakes["postgres"].aborted


def test_bad_arguments_and_unknown_jobs(engine: TwoPhaseCommitEngine, fakes: FakeParticipants) -> None:
    with pytest.raises(UnknownJob, match="register a writer first"):
        engine.commit_transaction(JOB, 1, 0, staged_files(JOB, 0))
    with pytest.raises(UnknownJob):
        engine.register_participants(JOB, 1, fakes.refs)
    with pytest.raises(InvalidRequest, match="job: must not be empty"):
        engine.register_writer("", "w")
    epoch = engine.register_writer(JOB, "w").epoch
    with pytest.raises(NoParticipants):
        engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0))
    engine.register_participants(JOB, epoch, fakes.refs)
    with pytest.raises(InvalidRequest, match="batch: must be >= 0"):
        engine.commit_transaction(JOB, epoch, -1, staged_files(JOB, 0))
    with pytest.raises(InvalidRequest, match=r"files\[0\].sha256: must be 64 hex characters"):
        engine.commit_transaction(JOB, epoch, 0, [StagedFile("file:///a", 1, "abc")])
    with pytest.raises(InvalidRequest, match=r"files\[0\].count: must be >= 0"):
        engine.commit_transaction(JOB, epoch, 0, [StagedFile("file:///a", -1, "a" * 64)])
    with pytest.raises(InvalidRequest, match=r"files\[0\].uri: must not be empty"):
        engine.commit_transaction(JOB, epoch, 0, [StagedFile("", 1, "a" * 64)])


def test_staging_is_collected_after_end(engine_factory: EngineFactory, fakes: FakeParticipants) -> None:
    collected: list[tuple[str, int]] = []
    done = threading.Event()

    def collect(job: str, batch: int) -> None:
        collected.append((job, batch))
        done.set()

    engine = engine_factory(staging_collector=collect)
    epoch = engine.register_writer(JOB, "w").epoch
    engine.register_participants(JOB, epoch, fakes.refs)
    fakes["kafka"].vote_no = "no"
    engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0))
    fakes["kafka"].vote_no = None
    assert engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0)).state is COMMITTED
    assert done.wait(5)
    assert collected == [(JOB, 0)]  # never after an abort: a retry may be staging into the same dir


def test_old_final_transactions_are_tombstoned(engine_factory: EngineFactory, fakes: FakeParticipants) -> None:
    engine = engine_factory(replace(FAST_ENGINE_CONFIG, retain_batches=3))
    epoch = engine.register_writer(JOB, "w").epoch
    engine.register_participants(JOB, epoch, fakes.refs)
    for batch in range(8):
        assert engine.commit_transaction(JOB, epoch, batch, staged_files(JOB, batch)).state is COMMITTED
    assert [t.id.batch for t in engine.list_transactions(JOB)] == [7, 6, 5, 4]
    engine.close()  # writes batch 7's END, queued for the next append, with the tombstone of batch 3
    restarted = engine_factory()
    assert [t.id.batch for t in restarted.list_transactions(JOB)] == [7, 6, 5, 4]


def test_close_stops_the_deliveries_before_it_returns(
    engine: TwoPhaseCommitEngine, fakes: FakeParticipants, epoch: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 24: a delivery thread that outlived its engine logged into a closed test stream
    ("I/O operation on closed file"), and a Commit sent to the closed fanout was a delivery_failed error."""
    fakes["postgres"].fail_commits = 10**6
    assert engine.commit_transaction(JOB, epoch, 0, staged_files(JOB, 0)).state is TransactionState.COMMITTING
    engine.close()
    closed = len(caplog.records)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("commit-")], "a delivery outlived close"
    time.sleep(0.5)  # longer than the backoff: a delivery still running would have retried and logged
    late = [r.getMessage() for r in caplog.records[closed:] if r.name.startswith("onceflow.coordinator")]
    assert late == []
    assert not [r for r in caplog.records if r.getMessage() == "txn.delivery_failed"]
