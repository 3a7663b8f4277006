"""The SQLite sink's own tables: prepared transactions (their bindings and staged files) and commits.

Result tables are the jobs' (see :mod:`onceflow.sinks.tables`): created from a binding's schema.
"""

from __future__ import annotations

from typing import Final

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS onceflow_pending (
    sink        TEXT    NOT NULL,
    job         TEXT    NOT NULL,
    batch       INTEGER NOT NULL,
    bindings    TEXT    NOT NULL,
    files       TEXT    NOT NULL,
    prepared_at REAL    NOT NULL,
    PRIMARY KEY (sink, job, batch)
);
CREATE TABLE IF NOT EXISTS onceflow_commits (
    sink         TEXT    NOT NULL,
    job          TEXT    NOT NULL,
    batch        INTEGER NOT NULL,
    committed_at REAL    NOT NULL,
    PRIMARY KEY (sink, job, batch)
);
"""
