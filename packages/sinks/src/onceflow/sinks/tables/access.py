"""A database's tables as every writer of onceflow rows sees them: describe a table, make it fit a
binding, write a binding's rows (upsert on its keys, or append).

The SQLite and PostgreSQL sink participants and the results consumer's store share these, so there
is one way to create, check and fill a table from an Arrow schema. Every method runs on the
connection or cursor it is given (``db``), inside whatever transaction its caller holds.
"""

from __future__ import annotations

import abc
from typing import Any, Final, Protocol, cast

import pyarrow as pa

from onceflow.contract import SinkBinding, SinkMode
from onceflow.sinks.tables.check import Column, TablePlan, plan_table
from onceflow.sinks.tables.dialects import POSTGRES, SQLITE, Dialect, postgres_array_type

#: A table's columns: name, type (as ``format_type`` spells it), NOT NULL, has a default.
POSTGRES_TABLE_COLUMNS: Final = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atthasdef
FROM pg_attribute a WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
"""

#: A table's primary key columns, in key order.
POSTGRES_PRIMARY_KEY: Final = """
SELECT a.attname FROM pg_index i
JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, position) ON true
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = to_regclass(%s) AND i.indisprimary ORDER BY k.position
"""


class Executor(Protocol):
    """What the methods need of ``db``: a DB-API connection or cursor (sqlite3 and psycopg both fit)."""

    def execute(self, query: Any, params: Any = ..., /) -> Any: ...


class TableAccess(abc.ABC):
    """The tables of one kind of database."""

    dialect: Dialect

    @abc.abstractmethod
    def describe(self, db: Executor, table: str) -> tuple[list[Column] | None, list[str]]:
        """The table's columns and primary key, or ``(None, [])`` when there is no such table."""

    @abc.abstractmethod
    def write(self, db: Executor, binding: SinkBinding, rows: pa.Table) -> None:
        """Insert ``rows`` into ``binding.table``: ``ON CONFLICT (keys) DO UPDATE`` for upsert, plain for append.

        Upsert rows must hold one row per key (see :func:`onceflow.sinks.base.rows.last_row_per_key`).
        """

    def lock(self, db: Executor, table: str) -> None:  # noqa: B027 - SQLite's write lock is the transaction's
        """Serialise :meth:`ensure` of ``table`` across processes, until the caller's transaction ends."""

    def ensure(self, db: Executor, sink: str, binding: SinkBinding) -> TablePlan:
        """Make ``binding.table`` fit ``binding`` (create it, add nullable columns) or raise
        :class:`~onceflow.sinks.exceptions.BindingRejected` (see :func:`plan_table`).

        Steps:
            1. Lock the table's name (PostgreSQL: an advisory lock held to the end of the transaction).
            2. Describe the table as it is.
            3. Plan the statements that make it fit, and run them.
        """
        # Step 1
        self.lock(db, binding.table)
        # Step 2
        existing, key = self.describe(db, binding.table)
        # Step 3
        plan = plan_table(self.dialect, sink, binding, existing, key)
        for statement in plan.statements:
            db.execute(self._statement(statement))
        return plan

    def _statement(self, text: str) -> Any:
        return text

    def _upsert_clause(self, binding: SinkBinding, names: list[str], excluded: str) -> str:
        if binding.mode is not SinkMode.UPSERT or not binding.keys:
            return ""
        q = self.dialect.quote
        others = [n for n in names if n not in binding.keys]
        conflict = f" ON CONFLICT ({', '.join(q(k) for k in binding.keys)}) "
        if not others:
            return conflict + "DO NOTHING"
        return conflict + "DO UPDATE SET " + ", ".join(f"{q(n)} = {excluded}.{q(n)}" for n in others)


class SqliteTables(TableAccess):
    """SQLite: ``PRAGMA table_info`` and one ``executemany`` per write."""

    dialect = SQLITE

    def describe(self, db: Executor, table: str) -> tuple[list[Column] | None, list[str]]:
        info = db.execute(f"PRAGMA table_info({SQLITE.quote(table)})").fetchall()
        if not info:
            return None, []
        columns = [
            Column(str(name), str(kind), bool(notnull), default is not None)
            for _, name, kind, notnull, default, _ in info
        ]
        key = [str(row[1]) for row in sorted((r for r in info if r[5]), key=lambda r: r[5])]
        return columns, key

    def write(self, db: Executor, binding: SinkBinding, rows: pa.Table) -> None:
        if not rows.num_rows:
            return
        q = SQLITE.quote
        names = rows.column_names
        statement = (
            f"INSERT INTO {q(binding.table)} ({', '.join(q(n) for n in names)}) "
            f"VALUES ({', '.join('?' for _ in names)})"
        ) + self._upsert_clause(binding, names, "excluded")
        # a sqlite3 connection or cursor: both have executemany
        cast(Any, db).executemany(statement, zip(*SQLITE.columns(rows), strict=True))


class PostgresTables(TableAccess):
    """PostgreSQL: the catalog for columns and keys, one set-based ``INSERT ... SELECT unnest(...)`` per write."""

    dialect = POSTGRES

    def describe(self, db: Executor, table: str) -> tuple[list[Column] | None, list[str]]:
        name = POSTGRES.quote(table)
        found = db.execute(POSTGRES_TABLE_COLUMNS, (name,)).fetchall()
        existing = [Column(str(n), str(t), bool(nn), bool(d)) for n, t, nn, d in found] if found else None
        primary_key = [str(k) for (k,) in db.execute(POSTGRES_PRIMARY_KEY, (name,)).fetchall()]
        return existing, primary_key

    def lock(self, db: Executor, table: str) -> None:
        db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"onceflow-table:{table}",))

    def _statement(self, text: str) -> Any:
        return text.encode()  # composed from quoted identifiers: not a LiteralString for psycopg's types

    def write(self, db: Executor, binding: SinkBinding, rows: pa.Table) -> None:
        """Every row in one statement: one array per column, ``unnest``\\ ed, sent in binary (``%b``:
        psycopg's binary dumpers skip the text array's quoting and escaping, half the cost of the
        statement for a batch of small rows)."""
        if not rows.num_rows:
            return
        q = POSTGRES.quote
        names = rows.column_names
        arrays = ", ".join(f"%b::{postgres_array_type(f.type)}" for f in rows.schema)
        statement = (
            f"INSERT INTO {q(binding.table)} ({', '.join(q(n) for n in names)}) SELECT * FROM unnest({arrays})"
        ) + self._upsert_clause(binding, names, "EXCLUDED")
        db.execute(statement.encode(), POSTGRES.columns(rows))


SQLITE_TABLES: Final = SqliteTables()
POSTGRES_TABLES: Final = PostgresTables()
