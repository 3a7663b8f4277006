"""The store's SQL, shared by SQLite and PostgreSQL (written with ``?`` placeholders), and the
:class:`SqlResultsStore` that runs it over any DB-API connection."""

from __future__ import annotations

import abc
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Final, Protocol

from onceflow.consumer.exceptions import StaleOffsets
from onceflow.consumer.model import ResultRow, StoredOffset
from onceflow.consumer.store.base import PartitionBatch, ResultBatch, ResultsStore

#: BIGINT is INTEGER affinity in SQLite, so one schema serves both databases.
SCHEMA: Final = (
    """
    CREATE TABLE IF NOT EXISTS results (
        window_start BIGINT NOT NULL,
        window_end   BIGINT NOT NULL,
        ip           TEXT   NOT NULL,
        count        BIGINT NOT NULL,
        PRIMARY KEY (window_start, ip)
    )
    """,
    "CREATE INDEX IF NOT EXISTS results_by_ip ON results (ip, window_start)",
    """
    CREATE TABLE IF NOT EXISTS consumer_offsets (
        group_id        TEXT   NOT NULL,
        topic           TEXT   NOT NULL,
        partition       INTEGER NOT NULL,
        next_offset     BIGINT NOT NULL,
        applied_records BIGINT NOT NULL,
        owner           TEXT   NOT NULL,
        updated_ms      BIGINT NOT NULL,
        PRIMARY KEY (group_id, topic, partition)
    )
    """,
)

UPSERT_RESULT: Final = """
INSERT INTO results (window_start, window_end, ip, count) VALUES (?, ?, ?, ?)
ON CONFLICT (window_start, ip) DO UPDATE SET window_end = excluded.window_end, count = excluded.count
"""

INSERT_FIRST_OFFSET: Final = """
INSERT INTO consumer_offsets (group_id, topic, partition, next_offset, applied_records, owner, updated_ms)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (group_id, topic, partition) DO NOTHING
"""

ADVANCE_OFFSET: Final = """
UPDATE consumer_offsets
SET next_offset = ?, applied_records = applied_records + ?, owner = ?, updated_ms = ?
WHERE group_id = ? AND topic = ? AND partition = ? AND next_offset = ?
"""

SELECT_OFFSETS: Final = """
SELECT partition, next_offset, applied_records, owner FROM consumer_offsets
WHERE group_id = ? AND topic = ? ORDER BY partition
"""

SELECT_OFFSET: Final = """
SELECT partition, next_offset FROM consumer_offsets WHERE group_id = ? AND topic = ? AND partition = ?
"""

SELECT_IP: Final = """
SELECT window_start, window_end, ip, count FROM results
WHERE ip = ? AND window_start >= ? AND window_start < ? ORDER BY window_start
"""

SELECT_TOP: Final = """
SELECT window_start, window_end, ip, count FROM results
WHERE window_start = ? ORDER BY count DESC, ip LIMIT ?
"""

SELECT_LATEST: Final = "SELECT MAX(window_start) FROM results"
SELECT_LATEST_ENDING_BY: Final = "SELECT MAX(window_start) FROM results WHERE window_end <= ?"
SELECT_ALL: Final = "SELECT window_start, window_end, ip, count FROM results ORDER BY window_start, ip"

#: Upper bound used for "no upper bound" on window starts (fits a signed 64-bit integer).
MAX_WINDOW_START: Final = 2**63 - 1


class Cursor(Protocol):
    """The DB-API cursor methods the store uses (sqlite3 and psycopg cursors both have them)."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, query: Any, params: Any = ..., /) -> Any: ...

    def executemany(self, query: Any, params_seq: Any, /) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchone(self) -> Any: ...


class SqlResultsStore(ResultsStore):
    """A :class:`ResultsStore` over one DB-API connection, serialised by a lock.

    Subclasses open the connection and provide :meth:`_transaction` (a cursor inside one database
    transaction, committed on a clean exit and rolled back on an exception) and :meth:`_reader`
    (a cursor for reads), plus the placeholder style.
    """

    placeholder: str = "?"

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def _sql(self, query: str) -> str:
        return query if self.placeholder == "?" else query.replace("?", self.placeholder)

    @abc.abstractmethod
    def _transaction(self) -> AbstractContextManager[Cursor]: ...

    @abc.abstractmethod
    def _reader(self) -> AbstractContextManager[Cursor]: ...

    def create_schema(self) -> None:
        with self._lock, self._transaction() as cur:
            for statement in SCHEMA:
                cur.execute(statement)

    def stored_offsets(self, group: str, topic: str) -> dict[int, StoredOffset]:
        with self._lock, self._reader() as cur:
            cur.execute(self._sql(SELECT_OFFSETS), (group, topic))
            return {int(p): StoredOffset(int(p), int(o), int(n), str(w)) for p, o, n, w in cur.fetchall()}

    def apply(self, batch: ResultBatch) -> None:
        """Apply one poll batch with its offsets.

        Steps:
            1. Begin one database transaction (SQLite: ``BEGIN IMMEDIATE``, the write lock up front).
            2. For every partition, compare-and-set its offset row: insert it when the batch starts
               from nothing stored, otherwise move ``next_offset`` forward only if it still equals
               ``expected_offset``; add the batch's records to ``applied_records``. A row that moved
               means another instance applied the partition: raise ``StaleOffsets`` (rollback).
            3. Upsert the rows by ``(window_start, ip)`` in offset order (last write wins).
            4. Commit: rows and offsets become visible together, or (crash, error) not at all.
        """
        now_ms = int(time.time() * 1000)
        # Step 1
        with self._lock, self._transaction() as cur:
            # Step 2
            for part in batch.partitions:
                self._advance(cur, batch, part, now_ms)
            # Step 3
            rows = [(r.window_start, r.window_end, r.ip, r.count) for r in batch.rows()]
            if rows:
                cur.executemany(self._sql(UPSERT_RESULT), rows)
        # Step 4 (leaving the transaction block committed it)

    def _advance(self, cur: Cursor, batch: ResultBatch, part: PartitionBatch, now_ms: int) -> None:
        key = (batch.group, batch.topic, part.partition)
        if part.expected_offset is None:
            cur.execute(self._sql(INSERT_FIRST_OFFSET), (*key, part.next_offset, len(part.rows), batch.owner, now_ms))
        else:
            cur.execute(
                self._sql(ADVANCE_OFFSET),
                (part.next_offset, len(part.rows), batch.owner, now_ms, *key, part.expected_offset),
            )
        if cur.rowcount != 1:
            cur.execute(self._sql(SELECT_OFFSET), key)
            found = cur.fetchone()
            stored = int(found[1]) if found is not None else None
            raise StaleOffsets(batch.topic, part.partition, part.expected_offset, stored)

    def counts_for_ip(self, ip: str, window_start_from: int, window_start_to: int | None) -> list[ResultRow]:
        upper = MAX_WINDOW_START if window_start_to is None else window_start_to
        return self._rows(SELECT_IP, (ip, window_start_from, upper))

    def top_ips(self, window_start: int, limit: int) -> list[ResultRow]:
        return self._rows(SELECT_TOP, (window_start, limit))

    def latest_window_start(self) -> int | None:
        return self._scalar(SELECT_LATEST, ())

    def latest_window_start_ending_by(self, end_limit: int) -> int | None:
        return self._scalar(SELECT_LATEST_ENDING_BY, (end_limit,))

    def all_results(self) -> list[ResultRow]:
        return self._rows(SELECT_ALL, ())

    def _rows(self, query: str, params: Sequence[object]) -> list[ResultRow]:
        with self._lock, self._reader() as cur:
            cur.execute(self._sql(query), tuple(params))
            return [ResultRow(int(s), int(e), str(ip), int(n)) for s, e, ip, n in cur.fetchall()]

    def _scalar(self, query: str, params: Sequence[object]) -> int | None:
        with self._lock, self._reader() as cur:
            cur.execute(self._sql(query), tuple(params))
            found = cur.fetchone()
            return None if found is None or found[0] is None else int(found[0])
