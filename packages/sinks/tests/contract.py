"""The participant contract as a reusable suite, run against every sink that stores rows we can read."""

from __future__ import annotations

import abc
from collections.abc import Iterator
from pathlib import Path

import pytest

from onceflow.contract import CommittedBatches, Resolution, TransactionId
from onceflow.contract.staging import StagedFile
from onceflow.sinks.base import SinkParticipant
from onceflow.sinks.exceptions import TransactionAlreadyCommitted, TransactionNotPrepared

from .conftest import W0, W1, Stage, bound, row

Results = dict[tuple[int, str], int]


class ParticipantContract(abc.ABC):
    """Behaviour every database participant must show. Subclasses say how to open one and read results."""

    @abc.abstractmethod
    def open(self, name: str = "db") -> SinkParticipant: ...

    @abc.abstractmethod
    def results(self) -> Results: ...

    @pytest.fixture
    def sink(self) -> Iterator[SinkParticipant]:
        participant = self.open()
        yield participant
        participant.close()

    def test_prepare_then_commit(self, sink: SinkParticipant, stage: Stage) -> None:
        files = stage("job", 0, [row("a", 1), row("b", 2)], [row("c", 3, W1)])
        txn = TransactionId("job", 0)

        vote = sink.prepare(txn, files, bound(sink))
        assert (vote.vote_commit, vote.rows) == (True, 3)
        assert sink.list_prepared() == [txn]
        assert self.results() == {}, "nothing is visible before commit"

        sink.commit(txn, files, bound(sink))
        assert sink.list_prepared() == []
        assert self.results() == {(W0, "a"): 1, (W0, "b"): 2, (W1, "c"): 3}

    def test_prepare_then_abort(self, sink: SinkParticipant, stage: Stage) -> None:
        txn = TransactionId("job", 0)
        assert sink.prepare(txn, stage("job", 0, [row("a", 1)]), bound(sink)).vote_commit
        sink.abort(txn)
        sink.abort(txn)  # idempotent
        sink.abort(TransactionId("job", 99))  # unknown: a no-op
        assert sink.list_prepared() == []
        assert self.results() == {}
        with pytest.raises(TransactionNotPrepared, match="job:0"):
            sink.commit(txn)

    def test_commit_is_idempotent(self, sink: SinkParticipant, stage: Stage) -> None:
        files = stage("job", 0, [row("a", 1)])
        txn = TransactionId("job", 0)
        sink.prepare(txn, files, bound(sink))
        sink.commit(txn, files, bound(sink))
        sink.commit(txn, files, bound(sink))
        sink.commit(txn)
        assert self.results() == {(W0, "a"): 1}
        with pytest.raises(TransactionAlreadyCommitted):
            sink.abort(txn)

    def test_prepare_twice_writes_once(self, sink: SinkParticipant, stage: Stage) -> None:
        files = stage("job", 0, [row("a", 1)])
        txn = TransactionId("job", 0)
        assert sink.prepare(txn, files, bound(sink)).vote_commit
        assert sink.prepare(txn, files, bound(sink)).vote_commit
        assert sink.list_prepared() == [txn]
        sink.commit(txn)
        assert self.results() == {(W0, "a"): 1}

    def test_update_mode_later_batch_replaces_count(self, sink: SinkParticipant, stage: Stage) -> None:
        for batch, files in enumerate(
            [
                stage("job", 0, [row("a", 1), row("b", 1)]),
                stage("job", 1, [row("a", 4)], [row("a", 5), row("c", 1, W1)]),  # within a batch, the later row wins
            ]
        ):
            txn = TransactionId("job", batch)
            assert sink.prepare(txn, files, bound(sink)).vote_commit
            sink.commit(txn)
        assert self.results() == {(W0, "a"): 5, (W0, "b"): 1, (W1, "c"): 1}

    def test_bad_staged_files_vote_no_naming_the_file(self, sink: SinkParticipant, stage: Stage) -> None:
        good, bad = stage("job", 0, [row("a", 1)], [row("b", 2)])
        Path(bad.uri.removeprefix("file://")).unlink()
        vote = sink.prepare(TransactionId("job", 0), [good, bad], bound(sink))
        assert not vote.vote_commit
        assert bad.uri in vote.reason and "does not exist" in vote.reason

        lying = StagedFile(good.uri, good.count, "0" * 64)
        vote = sink.prepare(TransactionId("job", 0), [lying], bound(sink))
        assert not vote.vote_commit and good.uri in vote.reason and "sha256" in vote.reason

        path = Path(good.uri.removeprefix("file://"))
        path.write_bytes(path.read_bytes()[:-8])
        vote = sink.prepare(TransactionId("job", 0), [good], bound(sink))
        assert not vote.vote_commit and good.uri in vote.reason
        assert sink.list_prepared() == []

    def test_prepared_state_survives_reopen_and_recover_commits(self, sink: SinkParticipant, stage: Stage) -> None:
        sink.prepare(TransactionId("job", 0), stage("job", 0, [row("a", 1)]), bound(sink))
        sink.prepare(TransactionId("job", 1), stage("job", 1, [row("b", 2)]), bound(sink))
        sink.prepare(TransactionId("other", 0), stage("other", 0, [row("c", 3)]), bound(sink))
        sink.close()

        reopened = self.open()
        try:
            assert sorted(reopened.list_prepared()) == [
                TransactionId("job", 0),
                TransactionId("job", 1),
                TransactionId("other", 0),
            ]
            decisions = {TransactionId("job", 0): Resolution.COMMIT, TransactionId("job", 1): Resolution.ABORT}
            done = reopened.recover(lambda txn: decisions.get(txn, Resolution.ABORT))
            assert done == {**decisions, TransactionId("other", 0): Resolution.ABORT}
            assert reopened.list_prepared() == []
            assert self.results() == {(W0, "a"): 1}
        finally:
            reopened.close()

    def test_commit_without_prepared_state_redoes_from_staged_files(self, sink: SinkParticipant, stage: Stage) -> None:
        files = stage("job", 3, [row("a", 7)])
        sink.commit(TransactionId("job", 3), files, bound(sink))
        sink.commit(TransactionId("job", 3), files, bound(sink))
        assert self.results() == {(W0, "a"): 7}

    def test_sinks_sharing_a_database_keep_their_transactions_apart(self, sink: SinkParticipant, stage: Stage) -> None:
        other = self.open("db2")
        try:
            sink.prepare(TransactionId("job", 0), stage("job", 0, [row("a", 1)]), bound(sink))
            assert other.list_prepared() == []
            other.abort(TransactionId("job", 0))
            assert sink.list_prepared() == [TransactionId("job", 0)]
        finally:
            other.close()

    def test_committed_batches_come_from_the_commit_records(self, sink: SinkParticipant, stage: Stage) -> None:
        """What ``onceflow txn rebuild`` reads: every committed batch per job, newest first; a prepared
        or aborted batch is not listed, nor another sink's."""
        other = self.open("db2")
        try:
            for job, batch in (("job", 0), ("job", 1), ("job", 2), ("other", 5)):
                txn = TransactionId(job, batch)
                sink.prepare(txn, stage(job, batch, [row(f"10.0.0.{batch}", 1)]), bound(sink))
                sink.commit(txn)
            sink.prepare(TransactionId("job", 3), stage("job", 3, [row("a", 1)]), bound(sink))
            sink.prepare(TransactionId("job", 4), stage("job", 4, [row("b", 1)]), bound(sink))
            sink.abort(TransactionId("job", 4))
            other.commit(TransactionId("job", 9), stage("job", 9, [row("c", 1)]), bound(other))

            assert sink.committed_batches(None, 1000) == [
                CommittedBatches("job", 2, (2, 1, 0)),
                CommittedBatches("other", 5, (5,)),
            ]
            assert sink.committed_batches("job", 2) == [CommittedBatches("job", 2, (2, 1))]
            assert sink.committed_batches("nothing", 10) == []
        finally:
            other.close()
