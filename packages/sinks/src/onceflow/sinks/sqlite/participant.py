"""The SQLite sink participant: the embedded default, one database file."""

from __future__ import annotations

import enum
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from onceflow.core.avro import IpCount
from onceflow.core.logging import get_logger
from onceflow.core.staging import StagedFile
from onceflow.sinks.base import SinkParticipant, TxnId, load_batch
from onceflow.sinks.exceptions import TransactionAlreadyCommitted, TransactionNotPrepared
from onceflow.sinks.sqlite.schema import APPLY_STAGED, SCHEMA, UPSERT_ROW

_log = get_logger(__name__)


class _State(enum.Enum):
    UNKNOWN = "unknown"
    PREPARED = "prepared"
    COMMITTED = "committed"


class SqliteParticipant(SinkParticipant):
    """Writes results to ``ip_counts`` in a SQLite file, with two-phase commit.

    The prepared state is the batch's rows in ``onceflow_staged_rows`` plus a row in
    ``onceflow_prepared``, written in one SQLite transaction; commit moves the rows into
    ``ip_counts`` and records ``(sink, job, batch)`` in ``onceflow_commits`` in one transaction.
    The database runs in WAL mode with ``synchronous=FULL``, so every committed SQLite
    transaction (and so every yes vote) survives a crash of the process or the machine.
    """

    def __init__(self, name: str, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        super().__init__(name)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = FULL")
        self._db.executescript(SCHEMA)
        _log.info("sqlite.open", sink=name, path=str(self.path))

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT), rolled back on any error."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _state(self, db: sqlite3.Connection, txn: TxnId) -> _State:
        key = (self.name, txn.job, txn.batch)
        if db.execute("SELECT 1 FROM onceflow_commits WHERE sink = ? AND job = ? AND batch = ?", key).fetchone():
            return _State.COMMITTED
        if db.execute("SELECT 1 FROM onceflow_prepared WHERE sink = ? AND job = ? AND batch = ?", key).fetchone():
            return _State.PREPARED
        return _State.UNKNOWN

    def prepare_rows(self, txn: TxnId, rows: Sequence[IpCount], files: Sequence[StagedFile]) -> None:
        """Write the rows to the staging table and mark ``txn`` prepared, in one SQLite transaction."""
        with self._transaction() as db:
            state = self._state(db, txn)
            if state is not _State.UNKNOWN:
                _log.info("prepare.again", sink=self.name, job=txn.job, batch=txn.batch, txn=txn, state=state.value)
                return
            db.executemany(
                "INSERT INTO onceflow_staged_rows VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (self.name, txn.job, txn.batch, r["window_start"], r["window_end"], r["ip"], r["count"])
                    for r in rows
                ],
            )
            db.execute(
                "INSERT INTO onceflow_prepared VALUES (?, ?, ?, ?, ?)",
                (self.name, txn.job, txn.batch, len(rows), time.time()),
            )

    def commit(self, txn: TxnId, files: Sequence[StagedFile] = ()) -> None:
        """Move the prepared rows into ``ip_counts`` and record the commit, in one SQLite transaction.

        Steps:
            1. An already committed ``txn`` is a no-op.
            2. Upsert the staged rows into ``ip_counts``. A transaction with no prepared state is
               redone from ``files`` when they are given (the coordinator decided COMMIT, so every
               participant voted yes), and is an error otherwise.
            3. Record ``(sink, job, batch)`` in ``onceflow_commits`` and drop the prepared state.
        """
        redo: list[IpCount] | None = None
        with self._lock:
            needs_redo = self._state(self._db, txn) is _State.UNKNOWN
        if needs_redo and files:
            redo = load_batch(files)
        with self._transaction() as db:
            # Step 1
            state = self._state(db, txn)
            if state is _State.COMMITTED:
                _log.info("commit.already_committed", sink=self.name, job=txn.job, batch=txn.batch, txn=txn)
                return
            # Step 2
            key = (self.name, txn.job, txn.batch)
            if state is _State.PREPARED:
                db.execute(APPLY_STAGED, key)
            elif redo is not None:
                _log.warning("commit.redo_from_staging", sink=self.name, job=txn.job, batch=txn.batch, txn=txn)
                db.executemany(UPSERT_ROW, [(r["window_start"], r["window_end"], r["ip"], r["count"]) for r in redo])
            else:
                raise TransactionNotPrepared(self.name, txn)
            # Step 3
            db.execute("INSERT INTO onceflow_commits VALUES (?, ?, ?, ?)", (*key, time.time()))
            db.execute("DELETE FROM onceflow_staged_rows WHERE sink = ? AND job = ? AND batch = ?", key)
            db.execute("DELETE FROM onceflow_prepared WHERE sink = ? AND job = ? AND batch = ?", key)
        _log.info("commit.done", sink=self.name, job=txn.job, batch=txn.batch, txn=txn)

    def abort(self, txn: TxnId) -> None:
        """Drop the prepared state of ``txn``; an unknown transaction is a no-op."""
        with self._transaction() as db:
            state = self._state(db, txn)
            if state is _State.COMMITTED:
                raise TransactionAlreadyCommitted(self.name, txn)
            key = (self.name, txn.job, txn.batch)
            db.execute("DELETE FROM onceflow_staged_rows WHERE sink = ? AND job = ? AND batch = ?", key)
            db.execute("DELETE FROM onceflow_prepared WHERE sink = ? AND job = ? AND batch = ?", key)
        _log.info("abort.done", sink=self.name, job=txn.job, batch=txn.batch, txn=txn, state=state.value)

    def list_prepared(self) -> list[TxnId]:
        with self._lock:
            found = self._db.execute(
                "SELECT job, batch FROM onceflow_prepared WHERE sink = ? ORDER BY prepared_at, job, batch", (self.name,)
            ).fetchall()
        return [TxnId(job, batch) for job, batch in found]

    def is_committed(self, txn: TxnId) -> bool:
        """True once ``txn`` has been committed to this sink."""
        with self._lock:
            return self._state(self._db, txn) is _State.COMMITTED

    def close(self) -> None:
        with self._lock:
            self._db.close()
