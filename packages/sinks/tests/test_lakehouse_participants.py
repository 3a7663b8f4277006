"""The participant contract on Delta Lake and Iceberg tables (local disk; Iceberg's catalog in SQLite and
in PostgreSQL), and what only the lakehouse sinks do: data files outside the table until the commit,
one prepared batch per job."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from onceflow.contract import Resolution, TransactionId
from onceflow.sinks.base import SinkParticipant
from onceflow.sinks.lakehouse.participant import LakehouseParticipant

from .conftest import W0, Stage, bound, row
from .contract import ParticipantContract, Results
from .lakehouse import open_lakehouse


class LakehouseContract(ParticipantContract):
    kind: str
    postgres: str = ""

    @pytest.fixture(autouse=True)
    def _base(self, tmp_path: Path) -> None:
        self.base = tmp_path

    def open(self, name: str = "db") -> SinkParticipant:
        return open_lakehouse(self.kind, self.base, name, postgres_dsn=self.postgres)

    def results(self) -> Results:
        reader = open_lakehouse(self.kind, self.base, "reader", postgres_dsn=self.postgres)
        try:
            held = reader.format.read("ip_counts")
        finally:
            reader.close()
        assert held is not None
        return {(r["window_start"], r["ip"]): r["count"] for r in held.to_pylist()}

    def test_prepared_state_survives_reopen_and_recover_commits(self, sink: SinkParticipant, stage: Stage) -> None:
        """As the contract's, with one prepared batch per job (a later batch of a job votes no meanwhile)."""
        assert sink.prepare(TransactionId("job", 0), stage("job", 0, [row("a", 1)]), bound(sink)).vote_commit
        later = sink.prepare(TransactionId("job", 1), stage("job", 1, [row("b", 2)]), bound(sink))
        assert not later.vote_commit and "job:0 is still prepared" in later.reason
        assert sink.prepare(TransactionId("other", 0), stage("other", 0, [row("c", 3)]), bound(sink)).vote_commit
        sink.close()

        reopened = self.open()
        try:
            assert reopened.list_prepared() == [TransactionId("job", 0), TransactionId("other", 0)]
            decisions = {TransactionId("job", 0): Resolution.COMMIT}
            done = reopened.recover(lambda txn: decisions.get(txn, Resolution.ABORT))
            assert done == {TransactionId("job", 0): Resolution.COMMIT, TransactionId("other", 0): Resolution.ABORT}
            assert reopened.list_prepared() == []
            assert self.results() == {(W0, "a"): 1}
            assert reopened.prepare(
                TransactionId("job", 1), stage("job", 1, [row("b", 2)]), bound(reopened)
            ).vote_commit
        finally:
            reopened.close()

    def test_data_files_stay_outside_the_table_until_the_commit(self, sink: SinkParticipant, stage: Stage) -> None:
        """Prepare writes the batch's data files under the table, which no table version lists: the
        table reads empty. Abort deletes them; commit makes exactly their rows visible."""
        assert isinstance(sink, LakehouseParticipant)
        before = _files(self.base)
        assert sink.prepare(TransactionId("job", 0), stage("job", 0, [row("a", 1)]), bound(sink)).vote_commit
        written = _files(self.base) - before
        assert [p for p in written if p.suffix == ".parquet"], written
        assert self.results() == {}
        sink.abort(TransactionId("job", 0))
        assert not [p for p in _files(self.base) - before if p.suffix == ".parquet"]
        assert sink.prepare(TransactionId("job", 0), stage("job", 0, [row("a", 2)]), bound(sink)).vote_commit
        sink.commit(TransactionId("job", 0))
        assert self.results() == {(W0, "a"): 2}
        assert sink.last_committed("ip_counts", "job") == 0


def _files(base: Path) -> set[Path]:
    return {Path(d) / f for d, _, names in os.walk(base) for f in names if "state" not in Path(d).parts}


class TestDeltaParticipant(LakehouseContract):
    kind = "delta"


class TestIcebergParticipant(LakehouseContract):
    kind = "iceberg"


def test_iceberg_catalog_in_postgresql(tmp_path: Path, postgres_dsn: str, stage: Stage) -> None:
    """The SQL catalog can be the participant's PostgreSQL: prepared state survives a reopen, the commit lands."""
    sink = open_lakehouse("iceberg", tmp_path, postgres_dsn=postgres_dsn)
    assert sink.prepare(TransactionId("job", 0), stage("job", 0, [row("a", 1), row("b", 2)]), bound(sink)).vote_commit
    sink.close()
    reopened = open_lakehouse("iceberg", tmp_path, postgres_dsn=postgres_dsn)
    try:
        assert reopened.recover(lambda txn: Resolution.COMMIT) == {TransactionId("job", 0): Resolution.COMMIT}
        held = reopened.format.read("ip_counts")
        assert held is not None
        assert sorted((r["ip"], r["count"]) for r in held.to_pylist()) == [("a", 1), ("b", 2)]
    finally:
        reopened.close()
