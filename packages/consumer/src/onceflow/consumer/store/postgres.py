"""The PostgreSQL results store."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from onceflow.consumer.store.sql import Cursor, SqlResultsStore
from onceflow.consumer.tables import StoredTable
from onceflow.sinks.tables import POSTGRES, POSTGRES_TABLES


class PostgresResultsStore(SqlResultsStore):
    """Results and offsets in PostgreSQL tables; several consumer instances may share the database.

    The connection runs in autocommit mode and every write is an explicit transaction, so reads
    never hold a transaction open. The offset compare-and-set of :meth:`apply` relies on row locks:
    a concurrent batch of another instance on the same partition waits, then finds the offset moved.

    An append table gets a ``bigserial`` column ``onceflow_seq`` (PostgreSQL has no row id), which
    orders its rows for listing.
    """

    placeholder = "%s"
    tables = POSTGRES_TABLES
    sequence_column = "onceflow_seq"

    def __init__(self, dsn: str, *, connect_timeout_s: int = 10) -> None:
        super().__init__()
        self.dsn = dsn
        self._conn: psycopg.Connection[Any] | None = psycopg.connect(
            dsn, autocommit=True, connect_timeout=connect_timeout_s
        )
        info = self._conn.info
        self.description = f"postgres:{info.host}:{info.port}/{info.dbname}"

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None:
            raise RuntimeError(f"results store {self.description} is closed")
        return self._conn

    def _prepare_append_table(self, cur: Cursor, table: StoredTable) -> None:
        q = POSTGRES.quote
        statement = f"ALTER TABLE {q(table.table)} ADD COLUMN IF NOT EXISTS {q(self.sequence_column)} bigserial"
        cur.execute(statement.encode())

    @contextmanager
    def _transaction(self) -> Iterator[Cursor]:
        conn = self._connection()
        with conn.transaction(), conn.cursor() as cur:
            yield cur

    @contextmanager
    def _reader(self) -> Iterator[Cursor]:
        with self._connection().cursor() as cur:
            yield cur

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
