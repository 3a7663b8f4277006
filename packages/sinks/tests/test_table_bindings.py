"""Tables for any schema, on real SQLite and PostgreSQL: types, modes, several bindings in one
transaction, and the check of an existing table when a job starts."""

from __future__ import annotations

import datetime as dt
import decimal
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pytest

from onceflow.contract import SinkBinding, SinkMode, TransactionId
from onceflow.contract.staging import StagedFile, StagingWriter
from onceflow.sinks.base import SinkParticipant
from onceflow.sinks.exceptions import BindingRejected
from onceflow.sinks.postgres import PostgresParticipant
from onceflow.sinks.sqlite import SqliteParticipant

WIDE = pa.schema(
    [
        pa.field("name", pa.string(), nullable=False),
        pa.field("n", pa.int64()),
        pa.field("small", pa.int32()),
        pa.field("ratio", pa.float64()),
        pa.field("price", pa.decimal128(12, 3)),
        pa.field("ok", pa.bool_()),
        pa.field("raw", pa.binary()),
        pa.field("day", pa.date32()),
        pa.field("at", pa.timestamp("us", tz="UTC")),
        pa.field("note", pa.string()),
    ]
)
AT = dt.datetime(2026, 11, 24, 1, 2, 3, 456789, tzinfo=dt.UTC)
ROWS: list[dict[str, Any]] = [
    {
        "name": "ü-1",
        "n": 2**40,
        "small": -7,
        "ratio": 0.25,
        "price": decimal.Decimal("1234.500"),
        "ok": True,
        "raw": b"\x00\xff",
        "day": dt.date(2026, 11, 24),
        "at": AT,
        "note": "x",
    },
    {
        "name": "two",
        "n": None,
        "small": None,
        "ratio": None,
        "price": None,
        "ok": None,
        "raw": None,
        "day": None,
        "at": None,
        "note": None,
    },
]


class Database:
    """One participant of a kind and a way to read its tables back as Python values."""

    def __init__(self, kind: str, tmp_path: Path, dsn: str) -> None:
        self.kind = kind
        self.path = tmp_path / "results.db"
        self.dsn = dsn

    def open(self) -> SinkParticipant:
        if self.kind == "sqlite":
            return SqliteParticipant("db", self.path)
        return PostgresParticipant("db", self.dsn, lock_timeout_ms=500)

    def execute(self, statement: str) -> None:
        if self.kind == "sqlite":
            with sqlite3.connect(self.path) as db:
                db.execute(statement)
        else:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                conn.execute(statement.encode())

    def rows(self, table: str, order: str) -> list[tuple[Any, ...]]:
        query = f'SELECT * FROM "{table}" ORDER BY {order}'
        if self.kind == "sqlite":
            with sqlite3.connect(self.path) as db:
                return [tuple(r) for r in db.execute(query).fetchall()]
        with psycopg.connect(self.dsn) as conn:
            return [tuple(r) for r in conn.execute(query.encode()).fetchall()]

    def wide_values(self, row: dict[str, Any]) -> tuple[Any, ...]:
        """How ``row`` reads back from this database (the documented storage of each type)."""
        if self.kind == "postgres":
            return tuple(row[f.name] for f in WIDE)
        stored = dict(row)
        stored["price"] = None if row["price"] is None else format(row["price"], "f")
        stored["ok"] = None if row["ok"] is None else int(row["ok"])
        stored["day"] = None if row["day"] is None else row["day"].isoformat()
        stored["at"] = None if row["at"] is None else row["at"].isoformat()
        return tuple(stored[f.name] for f in WIDE)


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Database:
    dsn = request.getfixturevalue("postgres_dsn") if request.param == "postgres" else ""
    return Database(request.param, tmp_path, dsn)


@pytest.fixture
def sink(database: Database) -> Iterator[SinkParticipant]:
    participant = database.open()
    yield participant
    participant.close()


def _stage(root: Path, batch: int, output: str, schema: pa.Schema, *parts: list[dict[str, Any]]) -> list[StagedFile]:
    writer = StagingWriter(str(root), "job", batch)
    return [writer.write(f"part-{i}-{output}", rows, schema, output=output) for i, rows in enumerate(parts)]


def _binding(table: str, mode: SinkMode = SinkMode.APPEND, output: str = "results", **more: Any) -> SinkBinding:
    return SinkBinding(sink="db", output=output, table=table, mode=mode, schema=WIDE, **more)


def test_every_type_round_trips_exactly(database: Database, sink: SinkParticipant, tmp_path: Path) -> None:
    binding = _binding("wide")
    sink.prepare_bindings("job", [binding])
    files = _stage(tmp_path, 0, "results", WIDE, ROWS)
    assert sink.prepare(TransactionId("job", 0), files, [binding]).vote_commit
    sink.commit(TransactionId("job", 0))
    assert database.rows("wide", "name DESC") == [database.wide_values(r) for r in ROWS]


def test_append_keeps_identical_rows_and_a_replay_adds_nothing(
    database: Database, sink: SinkParticipant, tmp_path: Path
) -> None:
    binding = _binding("events")
    same = [ROWS[1], ROWS[1]]
    files = _stage(tmp_path, 0, "results", WIDE, same, [ROWS[1]])
    txn = TransactionId("job", 0)
    assert sink.prepare(txn, files, [binding]).vote_commit
    assert sink.prepare(txn, files, [binding]).vote_commit  # prepared twice: written once
    sink.commit(txn)
    sink.commit(txn, files, [binding])  # a commit delivered again
    assert len(database.rows("events", "name")) == 3
    again = database.open()  # a participant restarted after the commit: the replay is recognised
    try:
        again.commit(txn, files, [binding])
    finally:
        again.close()
    assert len(database.rows("events", "name")) == 3


def test_several_bindings_commit_together_or_not_at_all(
    database: Database, sink: SinkParticipant, tmp_path: Path
) -> None:
    keyed = _binding("latest", SinkMode.UPSERT, keys=("name",))
    errors = _binding("rejects", output="dead_letters")
    files = _stage(tmp_path, 0, "results", WIDE, ROWS) + _stage(tmp_path, 0, "dead_letters", WIDE, [ROWS[1]])
    sink.prepare_bindings("job", [keyed, errors])
    assert sink.prepare(TransactionId("job", 0), files, [keyed, errors]).vote_commit
    sink.abort(TransactionId("job", 0))
    assert database.rows("latest", "name") == [] and database.rows("rejects", "name") == []
    assert sink.prepare(TransactionId("job", 1), files, [keyed, errors]).vote_commit
    sink.commit(TransactionId("job", 1))
    assert len(database.rows("latest", "name")) == 2 and len(database.rows("rejects", "name")) == 1
    # a later batch's row replaces the stored one with the same key
    later = [{**ROWS[0], "note": "later"}]
    assert sink.prepare(TransactionId("job", 2), _stage(tmp_path, 2, "results", WIDE, later), [keyed]).vote_commit
    sink.commit(TransactionId("job", 2))
    notes = [row[-1] for row in database.rows("latest", "name")]
    assert notes == [None, "later"]  # "two" sorts before "ü-1"


def test_a_nullable_column_the_query_gained_is_added(database: Database, sink: SinkParticipant) -> None:
    database.execute('CREATE TABLE "grown" ("name" TEXT NOT NULL)')
    sink.prepare_bindings("job", [SinkBinding(sink="db", table="grown", mode=SinkMode.APPEND, schema=WIDE)])
    assert len(database.rows("grown", "name")) == 0
    sink.prepare_bindings("job", [SinkBinding(sink="db", table="grown", mode=SinkMode.APPEND, schema=WIDE)])


@pytest.mark.parametrize(
    ("create", "binding", "message"),
    [
        (
            'CREATE TABLE "t" ("name" TEXT NOT NULL, "n" TEXT)',
            {"schema": WIDE, "mode": SinkMode.APPEND},
            r"table 't' \(output 'results'\): column 'n' has type",
        ),
        (
            'CREATE TABLE "t" ("n" BIGINT)',
            {"schema": WIDE, "mode": SinkMode.APPEND},
            r"column 'name' \(.* NOT NULL\) is missing",
        ),
        (
            'CREATE TABLE "t" ("name" TEXT PRIMARY KEY, "extra" TEXT NOT NULL)',
            {"schema": WIDE, "mode": SinkMode.APPEND},
            r"column 'extra' is NOT NULL without a default",
        ),
        (
            'CREATE TABLE "t" ("name" TEXT PRIMARY KEY)',
            {"schema": pa.schema([pa.field("name", pa.string()), pa.field("n", pa.int64())]), "keys": ("n",)},
            r"the upsert keys \(n\) are not the table's primary key \(name\)",
        ),
        (
            None,
            {"schema": pa.schema([pa.field("tags", pa.list_(pa.int64()))]), "mode": SinkMode.APPEND},
            r"column 'tags' has type list<item: int64>",
        ),
    ],
)
def test_a_table_that_does_not_fit_is_refused_naming_table_column_and_mismatch(
    database: Database, sink: SinkParticipant, create: str | None, binding: dict[str, Any], message: str
) -> None:
    if create is not None:
        database.execute(create.replace("BIGINT", "INTEGER") if database.kind == "sqlite" else create)
    with pytest.raises(BindingRejected, match=message):
        sink.prepare_bindings("job", [SinkBinding(sink="db", table="t", **binding)])


def test_a_null_for_a_not_null_column_votes_no_naming_it(
    database: Database, sink: SinkParticipant, tmp_path: Path
) -> None:
    database.execute('CREATE TABLE "strict" ("name" TEXT NOT NULL, "n" BIGINT NOT NULL)')
    schema = pa.schema([pa.field("name", pa.string()), pa.field("n", pa.int64())])
    binding = SinkBinding(sink="db", table="strict", mode=SinkMode.APPEND, schema=schema)
    sink.prepare_bindings("job", [binding])  # nullable output columns into NOT NULL ones: checked per batch
    files = _stage(tmp_path, 0, "results", schema, [{"name": "a", "n": 1}, {"name": "b", "n": None}])
    vote = sink.prepare(TransactionId("job", 0), files, [binding])
    assert not vote.vote_commit
    assert re.search(r"column ['\"]n['\"]", vote.reason) and "strict" in vote.reason


def test_every_dialect_names_every_column_kind() -> None:
    """A type the contract accepts is one every sink can declare: each dialect's table names every kind."""
    from onceflow.core.column_types import KINDS
    from onceflow.sinks.lakehouse.types import DELTA_TYPES, ICEBERG_TYPES
    from onceflow.sinks.tables.dialects import POSTGRES_TYPES, SQLITE_TYPES

    for table in (POSTGRES_TYPES, SQLITE_TYPES, DELTA_TYPES, ICEBERG_TYPES):
        assert set(table) == set(KINDS)
