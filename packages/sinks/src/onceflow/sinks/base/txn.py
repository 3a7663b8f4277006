"""Votes and commit records as the sink participants see them (transaction ids and the coordinator's
decision, :class:`~onceflow.core.contract.Resolution`: ``onceflow.core.contract``)."""

from __future__ import annotations

from dataclasses import dataclass


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
