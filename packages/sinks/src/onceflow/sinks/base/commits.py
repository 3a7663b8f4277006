"""Listing the batches a database sink committed, from its ``onceflow_commits`` table (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from onceflow.contract import CommittedBatches

#: Most batches per job one listing returns.
MAX_LISTED_BATCHES: Final = 10_000


def committed_batches_query(placeholder: str, *, by_job: bool) -> str:
    """``SELECT job, batch`` of the newest committed batches of each job of a sink, newest first.

    Parameters, in order: the sink, the job (only ``by_job``), the most batches per job. Both
    dialects run it as is (a window function over the ``(sink, job, batch)`` primary key).
    """
    job_filter = f" AND job = {placeholder}" if by_job else ""
    return (
        "SELECT job, batch FROM ("
        "SELECT job, batch, row_number() OVER (PARTITION BY job ORDER BY batch DESC) AS newest "
        f"FROM onceflow_commits WHERE sink = {placeholder}{job_filter}"
        f") AS ranked WHERE newest <= {placeholder} ORDER BY job, batch DESC"
    )


def group_committed(rows: Iterable[tuple[object, object]]) -> list[CommittedBatches]:
    """``(job, batch)`` rows, by job then newest batch, as one :class:`CommittedBatches` per job."""
    jobs: dict[str, list[int]] = {}
    for job, batch in rows:
        jobs.setdefault(str(job), []).append(int(str(batch)))
    return [CommittedBatches(job, batches[0], tuple(batches)) for job, batches in jobs.items()]
