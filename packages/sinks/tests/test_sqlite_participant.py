"""The SQLite participant against real database files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from onceflow.sinks.base import SinkParticipant
from onceflow.sinks.sqlite import SqliteParticipant

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
