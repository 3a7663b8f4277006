"""Read bindings back from SQLite and PostgreSQL tables (the tables' own types read back per dialect)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg

from onceflow.contract import SinkBinding
from onceflow.sinks.readback.base import NO_BATCH, BindingReader, Row
from onceflow.sinks.tables.dialects import POSTGRES, SQLITE, Dialect


def _select(dialect: Dialect, binding: SinkBinding) -> tuple[str, list[str]]:
    if binding.schema is None:
        raise ValueError(f"binding {binding.describe()} has no schema to read with")
    names = list(binding.schema.names)
    columns = ", ".join(dialect.quote(name) for name in names)
    return f"SELECT {columns} FROM {dialect.quote(binding.table)}", names


def _typed(dialect: Dialect, binding: SinkBinding, names: list[str], rows: list[tuple[object, ...]]) -> list[Row]:
    assert binding.schema is not None
    readers = [dialect.read(binding.schema.field(name).type) for name in names]
    return [
        {
            name: (read(value) if read is not None else value)
            for name, read, value in zip(names, readers, row, strict=True)
        }
        for row in rows
    ]


def _marks(reader: BindingReader, mark: str) -> str:
    """One placeholder per record name of ``reader``'s sink."""
    return ", ".join(mark for _ in reader.record_names)


def _totals(dialect: Dialect, table: str, column: str) -> str:
    return f"SELECT COUNT(*), COALESCE(SUM({dialect.quote(column)}), 0) FROM {dialect.quote(table)}"


class SqliteReader(BindingReader):
    """The tables of one SQLite database file (opened read-only)."""

    def __init__(self, name: str, path: str | Path, *, shards: int = 1) -> None:
        super().__init__(name, shards=shards)
        self.path = Path(path)

    def _connect(self) -> sqlite3.Connection:
        if not self.path.exists():
            raise FileNotFoundError(f"sink {self.name!r}: SQLite database {self.path} does not exist")
        return sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)

    def rows(self, binding: SinkBinding) -> list[Row]:
        query, names = _select(SQLITE, binding)
        with self._connect() as db:
            return _typed(SQLITE, binding, names, db.execute(query).fetchall())

    def totals(self, table: str, column: str) -> tuple[int, int]:
        """``(rows, sum of column)`` of ``table``, in one read (for progress displays)."""
        with self._connect() as db:
            rows, total = db.execute(_totals(SQLITE, table, column)).fetchone()
        return int(rows), int(total)

    def last_committed(self, job: str) -> int:
        with self._connect() as db:
            try:
                found = db.execute(
                    f"SELECT sink, max(batch) FROM onceflow_commits WHERE job = ? AND sink IN ({_marks(self, '?')}) "
                    "GROUP BY sink",
                    (job, *self.record_names),
                ).fetchall()
            except sqlite3.OperationalError:  # no onceflow_commits table: nothing was ever committed
                return NO_BATCH
        return self.whole({str(sink): int(last) for sink, last in found})


class PostgresReader(BindingReader):
    """The tables of one PostgreSQL database."""

    def __init__(self, name: str, dsn: str, *, connect_timeout_s: int = 10, shards: int = 1) -> None:
        super().__init__(name, shards=shards)
        self.dsn = dsn
        self._connect_timeout_s = connect_timeout_s

    def _connect(self) -> psycopg.Connection:
        return psycopg.connect(self.dsn, connect_timeout=self._connect_timeout_s)

    def rows(self, binding: SinkBinding) -> list[Row]:
        query, names = _select(POSTGRES, binding)
        with self._connect() as conn:
            return _typed(POSTGRES, binding, names, [tuple(r) for r in conn.execute(query).fetchall()])

    def totals(self, table: str, column: str) -> tuple[int, int]:
        """``(rows, sum of column)`` of ``table``, in one read (for progress displays)."""
        with self._connect() as conn:
            row = conn.execute(_totals(POSTGRES, table, column)).fetchone()
        assert row is not None  # an aggregate always answers one row
        return int(row[0]), int(row[1])

    def last_committed(self, job: str) -> int:
        with self._connect() as conn:
            if conn.execute("SELECT to_regclass('onceflow_commits')").fetchone() == (None,):
                return NO_BATCH
            found = conn.execute(
                "SELECT sink, max(batch) FROM onceflow_commits WHERE job = %s AND sink = ANY(%s) GROUP BY sink",
                (job, self.record_names),
            ).fetchall()
        return self.whole({str(sink): int(str(last)) for sink, last in found})
