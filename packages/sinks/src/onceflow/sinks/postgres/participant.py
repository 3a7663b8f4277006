"""The PostgreSQL sink participant: real ``PREPARE TRANSACTION`` two-phase commit."""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import psycopg
from psycopg import errors, sql
from psycopg_pool import ConnectionPool

from onceflow.contract import WHOLE_SINK, CommittedBatches, Shard, SinkBinding, TransactionId
from onceflow.contract.staging import StagedFile
from onceflow.core.logging import get_logger
from onceflow.sinks.base import BoundRows, SinkParticipant, committed_batches_query, group_committed
from onceflow.sinks.exceptions import (
    PreparedTransactionsDisabled,
    PrepareRejected,
    TransactionAlreadyCommitted,
    TransactionNotPrepared,
)
from onceflow.sinks.postgres.schema import DDL_LOCK, RECORD_COMMIT, SCHEMA, gid_of, gid_prefix, txn_of
from onceflow.sinks.tables.access import POSTGRES_TABLES

Connection = psycopg.Connection[tuple[object, ...]]

_log = get_logger(__name__)

#: A pooled connection idle this long is checked alive (one round trip) before it is used again.
IDLE_CHECK_S = 1.0


class PostgresParticipant(SinkParticipant):
    """Writes each binding's rows to its table in PostgreSQL, holding each batch as a prepared transaction.

    The prepared state is a PostgreSQL prepared transaction named ``onceflow:<sink>:<job>:<batch>``
    that writes every binding's rows (upsert on the keys, or append: a replay is recognised by the
    transaction id, never by a key) and records ``(sink, job, batch)`` in ``onceflow_commits``; the server
    keeps it across crashes and restarts of both the participant and PostgreSQL. The commits row
    tells a committed transaction from one that never prepared once the gid is gone.

    A shard of a sharded sink names its prepared transactions ``onceflow:<sink>#<index>:<job>:<batch>``
    and its commits rows ``<sink>#<index>``; the shards' DDL (``onceflow_commits``, a binding's table)
    is serialized by an advisory lock, so shards starting together do not race on ``CREATE TABLE``.

    Each operation takes its own connection from a pool (at most ``max_connections``; one idle
    for :data:`IDLE_CHECK_S` or more is checked alive first), so operations on different
    transactions run in parallel and none pays for a new connection. A prepared transaction lives
    in the server, not in a session: any pooled connection commits or rolls it back. A prepared
    transaction holds its row locks until it is resolved; a prepare that waits on them longer than
    ``lock_timeout_ms`` votes no instead of hanging.
    """

    def __init__(
        self,
        name: str,
        dsn: str,
        *,
        lock_timeout_ms: int = 10_000,
        connect_timeout_s: int = 10,
        max_connections: int = 8,
        shard: Shard = WHOLE_SINK,
    ) -> None:
        super().__init__(name, shard=shard)
        self.dsn = dsn
        self._lock_timeout_ms = lock_timeout_ms
        # Step 0: check that two-phase commit is possible at all, then create the tables (on a
        # connection of its own: a wrong DSN or server fails at once with psycopg's error).
        with psycopg.connect(dsn, autocommit=True, connect_timeout=connect_timeout_s) as conn:
            setting = conn.execute("SHOW max_prepared_transactions").fetchone()
            value = int(str(setting[0])) if setting else 0
            if value <= 0:
                raise PreparedTransactionsDisabled(name, value)
            with conn.transaction():
                conn.execute(DDL_LOCK)
                conn.execute(SCHEMA)
        self._ready: set[tuple[str, str]] = set()
        self._ready_lock = threading.Lock()
        self._last_used: weakref.WeakKeyDictionary[Connection, float] = weakref.WeakKeyDictionary()
        self._pool: ConnectionPool[Connection] = ConnectionPool(
            dsn,
            kwargs={
                "autocommit": True,
                "connect_timeout": connect_timeout_s,
                "application_name": f"onceflow-sink-{self.record_name}",
            },
            min_size=1,
            max_size=max_connections,
            timeout=connect_timeout_s,
            check=self._check_if_idle,
            name=f"onceflow-sink-{self.record_name}",
            open=True,
        )
        _log.info("postgres.open", sink=name, max_prepared_transactions=value, max_connections=max_connections)

    def prepare_bindings(self, job: str, bindings: Sequence[SinkBinding]) -> None:
        """Create or check every binding's table (see :func:`onceflow.sinks.tables.plan_table`)."""
        with self._connect() as conn:
            for binding in bindings:
                self._ensure_table(conn, binding, force=True)

    def _ensure_table(self, conn: Connection, binding: SinkBinding, *, force: bool = False) -> None:
        """Make ``binding.table`` fit the binding, in its own transaction (DDL stays out of prepared ones)."""
        key = (binding.table, binding.output)
        if binding.schema is None or (key in self._ready and not force):
            return
        with self._ready_lock, conn.transaction():
            conn.execute(DDL_LOCK)
            plan = POSTGRES_TABLES.ensure(conn, self.name, binding)
            self._ready.add(key)
        if plan.created or plan.added:
            _log.info(
                "table.ready", sink=self.name, table=binding.table, created=plan.created, added=",".join(plan.added)
            )

    @staticmethod
    def _write(conn: Connection, bound: BoundRows) -> None:
        """Every row of the binding in one set-based statement (see :class:`~onceflow.sinks.tables.PostgresTables`)."""
        POSTGRES_TABLES.write(conn, bound.binding, bound.rows)

    @contextmanager
    def _connect(self) -> Iterator[Connection]:
        """A pooled connection (autocommit, idle), given back when the block ends."""
        with self._pool.connection() as conn:
            try:
                yield conn
            finally:
                self._last_used[conn] = time.monotonic()

    def _check_if_idle(self, conn: Connection) -> None:
        """The pool's check before handing out ``conn``: a round trip only when it sat idle a while.

        Back to back, a round trip per operation would cost about as much as the connection did; a
        connection the server dropped since its last use (a restart within the last second) fails that
        one operation, which the coordinator retries (Commit) or aborts and the writer repeats (Prepare).
        """
        if time.monotonic() - self._last_used.get(conn, 0.0) >= IDLE_CHECK_S:
            ConnectionPool.check_connection(conn)

    def _is_prepared_or_committed(self, conn: Connection, gid: str, txn: TransactionId) -> bool:
        """One round trip: is ``gid`` a prepared transaction here, or is ``txn`` recorded as committed?"""
        found = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_prepared_xacts WHERE gid = %s AND database = current_database()) "
            "OR EXISTS (SELECT 1 FROM onceflow_commits WHERE sink = %s AND job = %s AND batch = %s)",
            (gid, self.record_name, txn.job, txn.batch),
        ).fetchone()
        return bool(found and found[0])

    def _is_committed(self, conn: Connection, txn: TransactionId) -> bool:
        found = conn.execute(
            "SELECT 1 FROM onceflow_commits WHERE sink = %s AND job = %s AND batch = %s",
            (self.record_name, txn.job, txn.batch),
        ).fetchone()
        return found is not None

    def prepare_rows(self, txn: TransactionId, outputs: Sequence[BoundRows], files: Sequence[StagedFile]) -> None:
        """Write every binding's rows and record the commit inside a transaction, then ``PREPARE TRANSACTION``.

        Steps:
            1. A transaction already prepared or committed is prepared: nothing to write. Tables a
               binding needs are made to fit first, each in its own short transaction.
            2. ``BEGIN``, set the lock timeout, write each binding's rows, insert ``(sink, job, batch)``
               into ``onceflow_commits``: sent as one pipeline with Step 3, one round trip in all.
            3. ``PREPARE TRANSACTION '<gid>'``: from here the server keeps the transaction durably.
        """
        gid = gid_of(self.record_name, txn)
        with self._connect() as conn:
            # Step 1
            if self._is_prepared_or_committed(conn, gid, txn):
                _log.info("prepare.again", sink=self.name, **txn.log_fields(), gid=gid)
                return
            for bound in outputs:
                self._ensure_table(conn, bound.binding)
            # Step 2 (pipelined: one round trip; the first error aborts the rest and is raised at the end)
            try:
                with conn.pipeline():
                    conn.execute("BEGIN")
                    conn.execute(
                        sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(f"{self._lock_timeout_ms}ms"))
                    )
                    for bound in outputs:
                        self._write(conn, bound)
                    conn.execute(RECORD_COMMIT, (self.record_name, txn.job, txn.batch))
                    # Step 3 (its answer arrives when the pipeline ends: the vote waits for it)
                    conn.execute(sql.SQL("PREPARE TRANSACTION {}").format(sql.Literal(gid)))
            except (
                errors.LockNotAvailable,
                errors.QueryCanceled,
                errors.UniqueViolation,
                errors.NotNullViolation,
                errors.DataError,
            ) as exc:
                conn.execute("ROLLBACK")
                raise PrepareRejected(
                    f"sink {self.name!r} cannot prepare {txn}: {type(exc).__name__}: {str(exc).strip()}"
                ) from exc
            except BaseException:
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    conn.execute("ROLLBACK")
                raise

    def commit(
        self, txn: TransactionId, files: Sequence[StagedFile] = (), bindings: Sequence[SinkBinding] = ()
    ) -> None:
        """``COMMIT PREPARED '<gid>'``; idempotent.

        Steps:
            1. ``COMMIT PREPARED``. Done if it succeeds.
            2. If no such prepared transaction exists, the commits table decides: a recorded
               batch was already committed (no-op).
            3. Otherwise the transaction never prepared here: redo it from ``files`` in one
               ordinary transaction when they are given (with ``bindings``), else raise
               :class:`TransactionNotPrepared`.
        """
        gid = gid_of(self.record_name, txn)
        with self._connect() as conn:
            # Step 1 (COMMIT PREPARED is atomic: a crash "midway" is one just before it)
            self.faults.at("commit-midway", sink=self.record_name, txn=txn)
            try:
                conn.execute(sql.SQL("COMMIT PREPARED {}").format(sql.Literal(gid)))
                _log.info("commit.done", sink=self.name, **txn.log_fields(), gid=gid)
                return
            except errors.UndefinedObject:
                pass
            # Step 2
            if self._is_committed(conn, txn):
                _log.info("commit.already_committed", sink=self.name, **txn.log_fields(), gid=gid)
                return
            # Step 3
            if not files:
                raise TransactionNotPrepared(self.name, txn)
            outputs = self.load(txn.job, files, bindings)
            rows = sum(b.rows.num_rows for b in outputs)
            _log.warning("commit.redo_from_staging", sink=self.name, **txn.log_fields(), rows=rows)
            for bound in outputs:
                self._ensure_table(conn, bound.binding)
            with conn.transaction():
                for bound in outputs:
                    self._write(conn, bound)
                conn.execute(RECORD_COMMIT, (self.record_name, txn.job, txn.batch))

    def abort(self, txn: TransactionId) -> None:
        """``ROLLBACK PREPARED '<gid>'``; an unknown transaction is a no-op, a committed one an error."""
        gid = gid_of(self.record_name, txn)
        with self._connect() as conn:
            try:
                conn.execute(sql.SQL("ROLLBACK PREPARED {}").format(sql.Literal(gid)))
                _log.info("abort.done", sink=self.name, **txn.log_fields(), gid=gid)
                return
            except errors.UndefinedObject:
                pass
            if self._is_committed(conn, txn):
                raise TransactionAlreadyCommitted(self.name, txn)
            _log.info("abort.unknown", sink=self.name, **txn.log_fields(), gid=gid)

    def list_prepared(self) -> list[TransactionId]:
        """This sink's prepared transactions in this database, from ``pg_prepared_xacts``, oldest first."""
        with self._connect() as conn:
            found = conn.execute(
                "SELECT gid FROM pg_prepared_xacts WHERE starts_with(gid, %s) AND database = current_database() "
                "ORDER BY prepared, gid",
                (gid_prefix(self.record_name),),
            ).fetchall()
        return [txn_of(self.record_name, str(gid)) for (gid,) in found]

    def committed_batches(self, job: str | None, limit: int) -> list[CommittedBatches]:
        """From ``onceflow_commits``: every batch is recorded, newest first."""
        query = committed_batches_query("%s", by_job=job is not None)
        params = (self.record_name, job, limit) if job is not None else (self.record_name, limit)
        with self._connect() as conn:
            rows = conn.execute(query, params).fetchall()
        return group_committed((str(j), str(b)) for j, b in rows)

    def close(self) -> None:
        """Close the pool's connections (prepared transactions stay in the server)."""
        self._pool.close()
