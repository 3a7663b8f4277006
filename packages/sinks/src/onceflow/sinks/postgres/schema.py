"""The PostgreSQL sink's own table and the global ids of its prepared transactions."""

from __future__ import annotations

from typing import Final

from onceflow.contract import TransactionId

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS onceflow_commits (
    sink         TEXT        NOT NULL,
    job          TEXT        NOT NULL,
    batch        BIGINT      NOT NULL,
    committed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (sink, job, batch)
)
"""

#: Serializes the sink's DDL (its commits table, a binding's table) across the processes of a sharded
#: sink: PostgreSQL's ``CREATE TABLE IF NOT EXISTS`` fails when two sessions create the same table.
DDL_LOCK: Final = "SELECT pg_advisory_xact_lock(hashtext('onceflow.sinks.ddl'))"

RECORD_COMMIT: Final = "INSERT INTO onceflow_commits (sink, job, batch) VALUES (%s, %s, %s)"

#: PostgreSQL's limit on a prepared transaction's identifier (GIDSIZE - 1).
MAX_GID_LENGTH: Final = 199


def gid_prefix(sink: str) -> str:
    """Every prepared transaction of ``sink`` (a record name: ``<sink>#<index>`` for a shard) has a gid
    starting with this; no other sink's or shard's does, as the ``:`` ends the name."""
    return f"onceflow:{sink}:"


def gid_of(sink: str, txn: TransactionId) -> str:
    """The prepared transaction's gid: ``onceflow:<sink>:<job>:<batch>``."""
    gid = f"{gid_prefix(sink)}{txn}"
    if len(gid) > MAX_GID_LENGTH:
        raise ValueError(f"transaction id {gid!r} is longer than PostgreSQL's {MAX_GID_LENGTH} characters")
    return gid


def txn_of(sink: str, gid: str) -> TransactionId:
    """The inverse of :func:`gid_of` (the job may contain ``:``; the batch is after the last one)."""
    prefix = gid_prefix(sink)
    if not gid.startswith(prefix):
        raise ValueError(f"gid {gid!r} is not one of sink {sink!r}")
    return TransactionId.parse(gid[len(prefix) :])
