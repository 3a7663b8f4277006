"""Commit records as the sink participants see them (transaction ids, votes and the coordinator's
decision, :class:`~onceflow.core.contract.Resolution`: ``onceflow.core.contract``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CommittedBatches:
    """What a sink's commit records say about one job: its newest committed batch and the newest
    committed batches (newest first). ``cumulative``: the sink records only its last batch (the Kafka
    sink's compacted markers), so every batch at or below ``last_batch`` counts as committed."""

    job: str
    last_batch: int
    batches: tuple[int, ...]
    cumulative: bool = False
