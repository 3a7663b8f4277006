"""Outcomes and votes as the sink participants see them (transaction ids: ``onceflow.core.contract``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Outcome(enum.Enum):
    """The coordinator's decision for a transaction (presumed abort: no decision means ABORT)."""

    COMMIT = "commit"
    ABORT = "abort"


@dataclass(frozen=True)
class PrepareResult:
    """A participant's vote. ``rows`` is how many distinct (window_start, ip) rows the batch writes."""

    vote_commit: bool
    rows: int = 0
    reason: str = ""

    @classmethod
    def yes(cls, rows: int) -> PrepareResult:
        return cls(vote_commit=True, rows=rows)

    @classmethod
    def no(cls, reason: str) -> PrepareResult:
        return cls(vote_commit=False, reason=reason)


@dataclass(frozen=True)
class CommittedBatches:
    """What a sink's commit records say about one job: its newest committed batch and the newest
    committed batches (newest first). ``cumulative``: the sink records only its last batch (the Kafka
    sink's compacted markers), so every batch at or below ``last_batch`` counts as committed."""

    job: str
    last_batch: int
    batches: tuple[int, ...]
    cumulative: bool = False
