"""The SQLite participant against real database files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from onceflow.contract import TransactionId
from onceflow.sinks.base import SinkParticipant
from onceflow.sinks.sqlite import SqliteParticipant

from .conftest import W0, Stage, bound, row
from .contract import ParticipantContract, Results


class TestSqliteParticipant(ParticipantContract):
    @pytest.fixture(autouse=True)
    def _database(self, tmp_path: Path) -> None:
        self.path = tmp_path / "sink.db"

    def open(self, name: str = "db") -> SinkParticipant:
        return SqliteParticipant(name, self.path)

    def results(self) -> Results:
        with sqlite3.connect(self.path) as db:
            return {(ws, ip): c for ws, ip, c in db.execute("SELECT window_start, ip, count FROM ip_counts")}

    def test_database_is_durable_wal(self, sink: SinkParticipant) -> None:
        with sqlite3.connect(self.path) as db:
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)

    def test_commit_writes_the_rows_its_prepare_read_without_reading_staging_again(
        self, sink: SinkParticipant, stage: Stage
    ) -> None:
        txn = TransactionId("job", 0)
        files = stage("job", 0, [row("a", 1)], [row("b", 2)])
        assert sink.prepare(txn, files, bound(sink)).vote_commit
        for staged in files:  # a second read would now fail: the commit must use what the prepare read
            Path(staged.uri.removeprefix("file://")).unlink()
        sink.commit(txn, files, bound(sink))
        assert self.results() == {(W0, "a"): 1, (W0, "b"): 2}

    def test_commit_after_a_restart_reads_the_prepared_files_again(self, sink: SinkParticipant, stage: Stage) -> None:
        txn = TransactionId("job", 0)
        assert sink.prepare(txn, stage("job", 0, [row("a", 1)]), bound(sink)).vote_commit
        sink.close()
        reopened = self.open()
        try:
            reopened.commit(txn)
        finally:
            reopened.close()
        assert self.results() == {(W0, "a"): 1}
