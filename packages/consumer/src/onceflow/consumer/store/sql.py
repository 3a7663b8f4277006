"""The store's SQL, shared by SQLite and PostgreSQL (written with ``?`` placeholders), and the
:class:`SqlResultsStore` that runs it over any DB-API connection."""

from __future__ import annotations

import abc
import base64
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Final, Protocol

import pyarrow as pa

from onceflow.consumer.exceptions import StaleOffsets
from onceflow.consumer.model import StoredOffset
from onceflow.consumer.store.base import PartitionBatch, ResultBatch, ResultsStore, Row, TableRow
from onceflow.consumer.tables import STORE_SINK, StoredTable
from onceflow.contract import SinkMode, schema_from_bytes, schema_to_bytes
from onceflow.core.logging import get_logger
from onceflow.sinks.base.rows import last_row_per_key
from onceflow.sinks.tables import TableAccess

#: BIGINT is INTEGER affinity in SQLite, so one schema serves both databases.
SCHEMA: Final = (
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
    """
    CREATE TABLE IF NOT EXISTS consumer_tables (
        table_name   TEXT   NOT NULL PRIMARY KEY,
        arrow_schema TEXT   NOT NULL,
        updated_ms   BIGINT NOT NULL
    )
    """,
)

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

SELECT_TABLE_SCHEMA: Final = "SELECT arrow_schema FROM consumer_tables WHERE table_name = ?"
SELECT_TABLE_SCHEMAS: Final = "SELECT table_name, arrow_schema FROM consumer_tables ORDER BY table_name"
UPSERT_TABLE_SCHEMA: Final = """
INSERT INTO consumer_tables (table_name, arrow_schema, updated_ms) VALUES (?, ?, ?)
ON CONFLICT (table_name) DO UPDATE SET arrow_schema = excluded.arrow_schema, updated_ms = excluded.updated_ms
"""

_log = get_logger(__name__)


class Cursor(Protocol):
    """The DB-API cursor methods the store uses (sqlite3 and psycopg cursors both have them)."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, query: Any, params: Any = ..., /) -> Any: ...

    def executemany(self, query: Any, params_seq: Any, /) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchone(self) -> Any: ...


def _encode_schema(schema: pa.Schema) -> str:
    return base64.b64encode(schema_to_bytes(schema)).decode("ascii")


def _decode_schema(text: str) -> pa.Schema:
    return schema_from_bytes(base64.b64decode(text))


def preload_conversions() -> threading.Thread:
    """Start a daemon thread that makes pyarrow's first conversion of Python values now.

    pyarrow imports pandas, when it is installed, on its first conversion of a Python list (its
    pandas shim asks whether the list is a pandas object): about a second, which the consumer's
    first batch paid in :meth:`SqlResultsStore.apply` (``batch.applied ... ms=963`` against 20 for
    the next batches). Started while the consumer joins its group, it costs that batch nothing; a
    conversion that starts meanwhile waits for the import (pyarrow's shim takes a lock).
    """

    def convert() -> None:
        pa.Table.from_pylist([{"preload": 0}])

    thread = threading.Thread(target=convert, name="arrow-preload", daemon=True)
    thread.start()
    return thread


def merged_schema(stored: pa.Schema | None, schema: pa.Schema) -> pa.Schema:
    """The table's columns after rows of ``schema`` arrived: the stored ones, then the new ones."""
    if stored is None:
        return schema
    return pa.schema([*stored, *(field for field in schema if field.name not in stored.names)])


def _runs(rows: Sequence[TableRow]) -> Iterator[tuple[StoredTable, pa.Schema, list[Row]]]:
    """Consecutive rows of the same table and schema, in order (so the last write of a key wins)."""
    start = 0
    for end in range(1, len(rows) + 1):
        if end == len(rows) or rows[end].table != rows[start].table or rows[end].schema is not rows[start].schema:
            yield rows[start].table, rows[start].schema, [r.row for r in rows[start:end]]
            start = end


class SqlResultsStore(ResultsStore):
    """A :class:`ResultsStore` over one DB-API connection, serialised by a lock.

    Subclasses open the connection and provide :meth:`_transaction` (a cursor inside one database
    transaction, committed on a clean exit and rolled back on an exception) and :meth:`_reader`
    (a cursor for reads), the placeholder style, the sinks' :class:`TableAccess` of their database,
    and the column that orders an append table's rows (:attr:`sequence_column`).
    """

    placeholder: str = "?"
    tables: TableAccess
    #: A column that grows with every inserted row (SQLite's ``rowid``; a ``bigserial`` in PostgreSQL).
    sequence_column: str = "rowid"

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def _sql(self, query: str) -> str:
        return query if self.placeholder == "?" else query.replace("?", self.placeholder)

    @abc.abstractmethod
    def _transaction(self) -> AbstractContextManager[Cursor]: ...

    @abc.abstractmethod
    def _reader(self) -> AbstractContextManager[Cursor]: ...

    def _prepare_append_table(self, cur: Cursor, table: StoredTable) -> None:
        """Give an append table its :attr:`sequence_column` when the database has none built in."""

    def create_schema(self) -> None:
        with self._lock, self._transaction() as cur:
            for statement in SCHEMA:
                cur.execute(statement)

    def create_index(self, name: str, table: str, columns: Sequence[str]) -> None:
        q = self.tables.dialect.quote
        with self._lock, self._transaction() as cur:
            cur.execute(f"CREATE INDEX IF NOT EXISTS {q(name)} ON {q(table)} ({', '.join(q(c) for c in columns)})")

    def stored_offsets(self, group: str, topic: str) -> dict[int, StoredOffset]:
        with self._lock, self._reader() as cur:
            cur.execute(self._sql(SELECT_OFFSETS), (group, topic))
            return {int(p): StoredOffset(int(p), int(o), int(n), str(w)) for p, o, n, w in cur.fetchall()}

    def prepare_table(self, table: StoredTable, schema: pa.Schema) -> None:
        """Create or extend ``table`` for rows of ``schema`` (the sinks' :meth:`TableAccess.ensure`), then
        record its columns in ``consumer_tables``; one transaction."""
        with self._lock, self._transaction() as cur:
            plan = self.tables.ensure(cur, STORE_SINK, table.binding(schema))
            if table.mode is SinkMode.APPEND:
                self._prepare_append_table(cur, table)
            cur.execute(self._sql(SELECT_TABLE_SCHEMA), (table.table,))
            found = cur.fetchone()
            stored = _decode_schema(str(found[0])) if found is not None else None
            columns = merged_schema(stored, schema)
            if stored is None or not columns.equals(stored):
                now_ms = int(time.time() * 1000)
                cur.execute(self._sql(UPSERT_TABLE_SCHEMA), (table.table, _encode_schema(columns), now_ms))
        if plan.created or plan.added:
            _log.info(
                "table.ready", table=table.table, topic=table.topic or "-", created=plan.created,
                added=",".join(plan.added) or "-", store=self.description,
            )  # fmt: skip

    def table_schemas(self) -> dict[str, pa.Schema]:
        with self._lock, self._reader() as cur:
            cur.execute(SELECT_TABLE_SCHEMAS)
            return {str(name): _decode_schema(str(text)) for name, text in cur.fetchall()}

    def apply(self, batch: ResultBatch) -> None:
        """Apply one poll batch with its offsets.

        Steps:
            1. Begin one database transaction (SQLite: ``BEGIN IMMEDIATE``, the write lock up front).
            2. For every partition, compare-and-set its offset row: insert it when the batch starts
               from nothing stored, otherwise move ``next_offset`` forward only if it still equals
               ``expected_offset``; add the batch's rows to ``applied_records``. A row that moved
               means another instance applied the partition: raise ``StaleOffsets`` (rollback).
            3. Write the rows table by table in offset order: upsert tables ``ON CONFLICT (keys)``
               (the last record of a key wins), append tables one row per record.
            4. Commit: rows and offsets become visible together, or (crash, error) not at all.
        """
        now_ms = int(time.time() * 1000)
        # Step 1
        with self._lock, self._transaction() as cur:
            # Step 2
            for part in batch.partitions:
                self._advance(cur, batch, part, now_ms)
            # Step 3
            for table, schema, rows in _runs(batch.rows()):
                arrow = pa.Table.from_pylist(rows, schema=schema)
                if table.mode is SinkMode.UPSERT:
                    arrow = last_row_per_key(arrow, table.keys)
                self.tables.write(cur, table.binding(schema), arrow)
        # Step 4 (leaving the transaction block committed it)

    def _advance(self, cur: Cursor, batch: ResultBatch, part: PartitionBatch, now_ms: int) -> None:
        key = (batch.group, part.topic, part.partition)
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
            raise StaleOffsets(part.topic, part.partition, part.expected_offset, stored)

    def table_rows(
        self, table: StoredTable, schema: pa.Schema, limit: int, after: Sequence[Any] | None
    ) -> list[tuple[tuple[Any, ...], Row]]:
        dialect = self.tables.dialect
        q = dialect.quote
        names = list(schema.names)
        if table.mode is SinkMode.UPSERT:
            order = [q(k) for k in table.keys]
            params = [self._stored(schema, name, value) for name, value in zip(table.keys, after or (), strict=False)]
        else:
            order = [self.sequence_column if self.sequence_column == "rowid" else q(self.sequence_column)]
            params = list(after or ())
        where = f" WHERE ({', '.join(order)}) > ({', '.join('?' for _ in order)})" if after is not None else ""
        query = (
            f"SELECT {', '.join([*order, *(q(n) for n in names)])} FROM {q(table.table)}{where} "
            f"ORDER BY {', '.join(order)} LIMIT ?"
        )
        readers = [dialect.read(schema.field(name).type) for name in names]
        found = []
        for record in self.select(query, [*params, limit]):
            position, values = tuple(record[: len(order)]), record[len(order) :]
            row = {n: (read(v) if read is not None else v) for n, read, v in zip(names, readers, values, strict=True)}
            if table.mode is SinkMode.UPSERT:
                position = tuple(row[k] for k in table.keys)
            found.append((position, row))
        return found

    def _stored(self, schema: pa.Schema, name: str, value: Any) -> Any:
        convert = self.tables.dialect.value(schema.field(name).type)
        return convert(value) if convert is not None else value

    def select(self, query: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        with self._lock, self._reader() as cur:
            cur.execute(self._sql(query), tuple(params))
            return [tuple(row) for row in cur.fetchall()]
