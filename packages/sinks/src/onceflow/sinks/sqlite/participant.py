"""The SQLite sink participant: the embedded default, one database file, any table."""

from __future__ import annotations

import dataclasses
import enum
import json
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from onceflow.contract import WHOLE_SINK, CommittedBatches, Shard, SinkBinding, TransactionId
from onceflow.contract.staging import StagedFile
from onceflow.core.logging import get_logger
from onceflow.sinks.base import BoundRows, SinkParticipant, committed_batches_query, group_committed
from onceflow.sinks.exceptions import PrepareRejected, TransactionAlreadyCommitted, TransactionNotPrepared
from onceflow.sinks.sqlite.schema import SCHEMA
from onceflow.sinks.tables import SQLITE_TABLES, Column, null_violation

_log = get_logger(__name__)

#: Prepared transactions whose rows a participant keeps in memory for their commit (oldest dropped first).
LOADED_KEPT = 8


class _State(enum.Enum):
    UNKNOWN = "unknown"
    PREPARED = "prepared"
    COMMITTED = "committed"


class SqliteParticipant(SinkParticipant):
    """Writes each binding's rows to its table in a SQLite file, with two-phase commit.

    The prepared state is a row in ``onceflow_pending`` holding the transaction's bindings and staged
    files (which the coordinator keeps until the transaction ends), written after the rows were read,
    verified and checked against their tables (a NOT NULL column that would get a null votes no).
    Commit writes every binding's rows (upsert on the keys, or append) and records
    ``(sink, job, batch)`` in ``onceflow_commits`` in ONE SQLite transaction, so a replayed batch is
    recognised by its id, never by a key. WAL mode with ``synchronous=FULL``: every committed SQLite
    transaction (and so every yes vote) survives a crash of the process or the machine.

    The rows a prepare read and verified are kept in memory (for at most :data:`LOADED_KEPT`
    transactions) for its commit, so each staged file is read and decoded once per participant; a
    commit without them (after a restart, or evicted) reads the files again.

    The shards of a sharded sink share the file (SQLite serializes their write transactions; the
    busy timeout waits for the lock): each records its prepared and committed batches as
    ``<sink>#<index>``. That scales reading and checking the staged files, not SQLite's one writer.
    """

    def __init__(
        self, name: str, path: str | Path, *, busy_timeout_ms: int = 10_000, shard: Shard = WHOLE_SINK
    ) -> None:
        super().__init__(name, shard=shard)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = FULL")
        self._db.executescript(SCHEMA)
        self._ready: set[tuple[str, str]] = set()
        self._loaded: OrderedDict[TransactionId, Sequence[BoundRows]] = OrderedDict()
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

    # --- tables ---------------------------------------------------------------------------------

    def _columns(self, table: str) -> tuple[list[Column] | None, list[str]]:
        """The table's columns and primary key, or (None, []) when there is no such table."""
        return SQLITE_TABLES.describe(self._db, table)

    def prepare_bindings(self, job: str, bindings: Sequence[SinkBinding]) -> None:
        """Create or check every binding's table (see :func:`onceflow.sinks.tables.plan_table`)."""
        with self._transaction() as db:
            for binding in bindings:
                self._ensure_table(db, binding, force=True)

    def _ensure_table(self, db: sqlite3.Connection, binding: SinkBinding, *, force: bool = False) -> None:
        """Make ``binding.table`` fit the binding: checked when a job starts, then once per participant life."""
        if binding.schema is None or ((binding.table, binding.output) in self._ready and not force):
            return
        plan = SQLITE_TABLES.ensure(db, self.name, binding)
        if plan.created or plan.added:
            _log.info(
                "table.ready", sink=self.name, table=binding.table, created=plan.created, added=",".join(plan.added)
            )
        self._ready.add((binding.table, binding.output))

    def _write(self, db: sqlite3.Connection, bound: BoundRows) -> None:
        SQLITE_TABLES.write(db, bound.binding, bound.rows)

    # --- the protocol ---------------------------------------------------------------------------

    def _state(self, db: sqlite3.Connection, txn: TransactionId) -> _State:
        key = (self.record_name, txn.job, txn.batch)
        if db.execute("SELECT 1 FROM onceflow_commits WHERE sink = ? AND job = ? AND batch = ?", key).fetchone():
            return _State.COMMITTED
        if db.execute("SELECT 1 FROM onceflow_pending WHERE sink = ? AND job = ? AND batch = ?", key).fetchone():
            return _State.PREPARED
        return _State.UNKNOWN

    def prepare_rows(self, txn: TransactionId, outputs: Sequence[BoundRows], files: Sequence[StagedFile]) -> None:
        """Check the rows against their tables and record the prepared transaction, in one SQLite transaction.

        Steps:
            1. A transaction already prepared or committed is prepared: nothing to write.
            2. Create or check each binding's table; a NOT NULL column that a row would leave null
               is a no vote naming it.
            3. Record the bindings and the staged files in ``onceflow_pending``.
        """
        with self._transaction() as db:
            # Step 1
            state = self._state(db, txn)
            if state is not _State.UNKNOWN:
                _log.info("prepare.again", sink=self.name, **txn.log_fields(), state=state.value)
                return
            # Step 2
            for bound in outputs:
                self._ensure_table(db, bound.binding)
                columns, _ = self._columns(bound.binding.table)
                problem = null_violation(bound.binding, [c.name for c in columns or () if c.not_null], bound.rows)
                if problem:
                    raise PrepareRejected(f"sink {self.name!r} cannot prepare {txn}: {problem}")
            # Step 3
            db.execute(
                "INSERT INTO onceflow_pending VALUES (?, ?, ?, ?, ?, ?)",
                (
                    self.record_name,
                    txn.job,
                    txn.batch,
                    json.dumps([b.binding.to_dict() for b in outputs]),
                    json.dumps([dataclasses.asdict(f) for f in files]),
                    time.time(),
                ),
            )
        self._keep_loaded(txn, outputs)

    def _keep_loaded(self, txn: TransactionId, outputs: Sequence[BoundRows]) -> None:
        """Remember the rows ``txn`` prepared, for its commit (the staged files are immutable and verified)."""
        with self._lock:
            self._loaded[txn] = outputs
            while len(self._loaded) > LOADED_KEPT:
                self._loaded.popitem(last=False)

    def _take_loaded(self, txn: TransactionId) -> Sequence[BoundRows] | None:
        with self._lock:
            return self._loaded.pop(txn, None)

    def _pending(self, txn: TransactionId) -> tuple[list[StagedFile], list[SinkBinding]] | None:
        with self._lock:
            found = self._db.execute(
                "SELECT files, bindings FROM onceflow_pending WHERE sink = ? AND job = ? AND batch = ?",
                (self.record_name, txn.job, txn.batch),
            ).fetchone()
        if found is None:
            return None
        files = [StagedFile(**f) for f in json.loads(found[0])]
        return files, [SinkBinding.from_dict(b) for b in json.loads(found[1])]

    def commit(
        self, txn: TransactionId, files: Sequence[StagedFile] = (), bindings: Sequence[SinkBinding] = ()
    ) -> None:
        """Write every binding's rows and record the commit, in one SQLite transaction; idempotent.

        Steps:
            1. An already committed ``txn`` is a no-op.
            2. Take the rows of the prepared bindings and files (as the prepare read them, else read
               the files again); a transaction with no prepared state
               is redone from ``files`` and ``bindings`` when given (the coordinator decided COMMIT,
               so every participant voted yes), and is an error otherwise.
            3. In one transaction: write each binding's rows, record ``(sink, job, batch)`` in
               ``onceflow_commits`` and drop the prepared state.
        """
        loaded = self._take_loaded(txn)
        with self._lock:
            state = self._state(self._db, txn)
        # Step 1
        if state is _State.COMMITTED:
            _log.info("commit.already_committed", sink=self.name, **txn.log_fields())
            return
        # Step 2
        pending = self._pending(txn)
        if pending is not None:
            outputs = loaded if loaded is not None else self.load(txn.job, *pending)
        elif files:
            _log.warning("commit.redo_from_staging", sink=self.name, **txn.log_fields())
            outputs = self.load(txn.job, files, bindings)
        else:
            raise TransactionNotPrepared(self.name, txn)
        # Step 3
        key = (self.record_name, txn.job, txn.batch)
        with self._transaction() as db:
            if self._state(db, txn) is _State.COMMITTED:
                return
            for bound in outputs:
                self._ensure_table(db, bound.binding)
                self._write(db, bound)
            self.faults.at("commit-midway", sink=self.record_name, txn=txn)
            db.execute("INSERT INTO onceflow_commits VALUES (?, ?, ?, ?)", (*key, time.time()))
            db.execute("DELETE FROM onceflow_pending WHERE sink = ? AND job = ? AND batch = ?", key)
        rows = sum(b.rows.num_rows for b in outputs)
        _log.info("commit.done", sink=self.name, **txn.log_fields(), rows=rows)

    def abort(self, txn: TransactionId) -> None:
        """Drop the prepared state of ``txn``; an unknown transaction is a no-op."""
        self._take_loaded(txn)
        with self._transaction() as db:
            state = self._state(db, txn)
            if state is _State.COMMITTED:
                raise TransactionAlreadyCommitted(self.name, txn)
            db.execute(
                "DELETE FROM onceflow_pending WHERE sink = ? AND job = ? AND batch = ?",
                (self.record_name, txn.job, txn.batch),
            )
        _log.info("abort.done", sink=self.name, **txn.log_fields(), state=state.value)

    def list_prepared(self) -> list[TransactionId]:
        with self._lock:
            found = self._db.execute(
                "SELECT job, batch FROM onceflow_pending WHERE sink = ? ORDER BY prepared_at, job, batch",
                (self.record_name,),
            ).fetchall()
        return [TransactionId(job, batch) for job, batch in found]

    def committed_batches(self, job: str | None, limit: int) -> list[CommittedBatches]:
        """From ``onceflow_commits``: every batch is recorded, newest first."""
        query = committed_batches_query("?", by_job=job is not None)
        params = (self.record_name, job, limit) if job is not None else (self.record_name, limit)
        with self._lock:
            rows = self._db.execute(query, params).fetchall()
        return group_committed(rows)

    def is_committed(self, txn: TransactionId) -> bool:
        """True once ``txn`` has been committed to this sink."""
        with self._lock:
            return self._state(self._db, txn) is _State.COMMITTED

    def close(self) -> None:
        with self._lock:
            self._db.close()
