"""Tables of the PostgreSQL sink and the global transaction ids of its prepared transactions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from onceflow.core.avro import IpCount
from onceflow.sinks.base import TxnId

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS ip_counts (
    window_start BIGINT NOT NULL,
    window_end   BIGINT NOT NULL,
    ip           TEXT   NOT NULL,
    count        BIGINT NOT NULL,
    PRIMARY KEY (window_start, ip)
);
CREATE TABLE IF NOT EXISTS onceflow_commits (
    sink         TEXT        NOT NULL,
    job          TEXT        NOT NULL,
    batch        BIGINT      NOT NULL,
    committed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (sink, job, batch)
)
"""

#: Upsert a whole batch in one statement: the columns as four arrays (see :func:`upsert_params`). The
#: rows go in array order (load_batch sorts them by key, so row locks are taken in one global order)
#: and each key appears once (load_batch keeps the last row of a key), as ON CONFLICT requires.
UPSERT_ROWS: Final = """
INSERT INTO ip_counts (window_start, window_end, ip, count)
SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::bigint[])
ON CONFLICT (window_start, ip) DO UPDATE SET window_end = EXCLUDED.window_end, count = EXCLUDED.count
"""

RECORD_COMMIT: Final = "INSERT INTO onceflow_commits (sink, job, batch) VALUES (%s, %s, %s)"


def upsert_params(rows: Sequence[IpCount]) -> tuple[list[int], list[int], list[str], list[int]]:
    """The parameters of :data:`UPSERT_ROWS`: one list per column."""
    return (
        [r["window_start"] for r in rows],
        [r["window_end"] for r in rows],
        [r["ip"] for r in rows],
        [r["count"] for r in rows],
    )


#: PostgreSQL's limit on a prepared transaction's identifier (GIDSIZE - 1).
MAX_GID_LENGTH: Final = 199


def gid_prefix(sink: str) -> str:
    """Every prepared transaction of ``sink`` has a gid starting with this."""
    return f"onceflow:{sink}:"


def gid_of(sink: str, txn: TxnId) -> str:
    """The prepared transaction's gid: ``onceflow:<sink>:<job>:<batch>``."""
    gid = f"{gid_prefix(sink)}{txn}"
    if len(gid) > MAX_GID_LENGTH:
        raise ValueError(f"transaction id {gid!r} is longer than PostgreSQL's {MAX_GID_LENGTH} characters")
    return gid


def txn_of(sink: str, gid: str) -> TxnId:
    """The inverse of :func:`gid_of` (the job may contain ``:``; the batch is after the last one)."""
    prefix = gid_prefix(sink)
    if not gid.startswith(prefix):
        raise ValueError(f"gid {gid!r} is not one of sink {sink!r}")
    return TxnId.parse(gid[len(prefix) :])
