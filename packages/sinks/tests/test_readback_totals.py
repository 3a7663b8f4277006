"""Totals of a sink table through the read-back API, on real SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from onceflow.sinks.readback import PostgresReader, SqliteReader


def test_sqlite_totals_count_rows_and_sum_a_column(tmp_path: Path) -> None:
    path = tmp_path / "sink.db"
    with sqlite3.connect(path) as db:
        db.execute('CREATE TABLE "odd name" (ip TEXT, "count" INTEGER)')
        db.executemany('INSERT INTO "odd name" VALUES (?, ?)', [("a", 3), ("b", 4)])
        db.execute("CREATE TABLE empty (ip TEXT, count INTEGER)")
    reader = SqliteReader("sqlite", path)
    assert reader.totals("odd name", "count") == (2, 7)
    assert reader.totals("empty", "count") == (0, 0)
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        reader.totals("missing", "count")


def test_postgres_totals_count_rows_and_sum_a_column(postgres_dsn: str) -> None:
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute('CREATE TABLE totals_t (ip TEXT, "count" BIGINT)')
        conn.execute("INSERT INTO totals_t VALUES ('a', 5), ('b', 6), ('c', 7)")
    assert PostgresReader("pg", postgres_dsn).totals("totals_t", "count") == (3, 18)
    with pytest.raises(psycopg.errors.UndefinedTable):
        PostgresReader("pg", postgres_dsn).totals("missing", "count")
