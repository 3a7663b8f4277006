"""The SQLite results store (the embedded default)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from onceflow.consumer.store.sql import Cursor, SqlResultsStore
from onceflow.sinks.tables import SQLITE_TABLES


class SqliteResultsStore(SqlResultsStore):
    """Results and offsets in one SQLite file.

    WAL journal with ``synchronous=FULL``: a committed batch survives ``kill -9`` and power loss.
    Writes take the write lock up front (``BEGIN IMMEDIATE``), so several consumer processes may
    share the file; a writer waits up to ``busy_timeout_ms`` for another. An append table's rows
    are listed in ``rowid`` order.
    """

    tables = SQLITE_TABLES

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        super().__init__()
        self.path = Path(path)
        self.description = f"sqlite:{self.path}"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000
        )
        self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = FULL")

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"results store {self.description} is closed")
        return self._conn

    @contextmanager
    def _transaction(self) -> Iterator[Cursor]:
        conn = self._connection()
        cur = conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
        except BaseException:
            conn.rollback()
            raise
        else:
            conn.commit()
        finally:
            cur.close()

    @contextmanager
    def _reader(self) -> Iterator[Cursor]:
        cur = self._connection().cursor()
        try:
            yield cur
        finally:
            cur.close()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
