"""Tables of the SQLite sink: results, prepared transactions with their staged rows, and commits."""

from __future__ import annotations

from typing import Final

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS ip_counts (
    window_start INTEGER NOT NULL,
    window_end   INTEGER NOT NULL,
    ip           TEXT    NOT NULL,
    count        INTEGER NOT NULL,
    PRIMARY KEY (window_start, ip)
);
CREATE TABLE IF NOT EXISTS onceflow_prepared (
    sink        TEXT    NOT NULL,
    job         TEXT    NOT NULL,
    batch       INTEGER NOT NULL,
    rows        INTEGER NOT NULL,
    prepared_at REAL    NOT NULL,
    PRIMARY KEY (sink, job, batch)
);
CREATE TABLE IF NOT EXISTS onceflow_staged_rows (
    sink         TEXT    NOT NULL,
    job          TEXT    NOT NULL,
    batch        INTEGER NOT NULL,
    window_start INTEGER NOT NULL,
    window_end   INTEGER NOT NULL,
    ip           TEXT    NOT NULL,
    count        INTEGER NOT NULL,
    PRIMARY KEY (sink, job, batch, window_start, ip)
);
CREATE TABLE IF NOT EXISTS onceflow_commits (
    sink         TEXT    NOT NULL,
    job          TEXT    NOT NULL,
    batch        INTEGER NOT NULL,
    committed_at REAL    NOT NULL,
    PRIMARY KEY (sink, job, batch)
);
"""

UPSERT_ROW: Final = """
INSERT INTO ip_counts (window_start, window_end, ip, count) VALUES (?, ?, ?, ?)
ON CONFLICT (window_start, ip) DO UPDATE SET window_end = excluded.window_end, count = excluded.count
"""

APPLY_STAGED: Final = """
INSERT INTO ip_counts (window_start, window_end, ip, count)
SELECT window_start, window_end, ip, count FROM onceflow_staged_rows WHERE sink = ? AND job = ? AND batch = ?
ORDER BY window_start, ip
ON CONFLICT (window_start, ip) DO UPDATE SET window_end = excluded.window_end, count = excluded.count
"""
