"""What a sink's commit records say, as every process names it: the sinks keep them, the participant
server lists them (ListCommittedBatches), the coordinator reads them to answer a writer and to
rebuild a lost log."""

from __future__ import annotations

from dataclasses import dataclass

from onceflow.contract.shards import WHOLE_SINK, Shard


@dataclass(frozen=True, slots=True)
class CommittedBatches:
    """What a sink's commit records say about one job: its newest committed batch and the newest
    committed batches (newest first). ``cumulative``: the sink records only its last batch (the Kafka
    sink's compacted markers), so every batch at or below ``last_batch`` counts as committed."""

    job: str
    last_batch: int
    batches: tuple[int, ...]
    cumulative: bool = False


@dataclass(frozen=True, slots=True)
class HostedCommits:
    """One sink a participant server hosts, as ListCommittedBatches answers it: the ``shard`` of it
    the server serves (:data:`WHOLE_SINK`: all of it) and its commit records per job."""

    sink: str
    shard: Shard = WHOLE_SINK
    jobs: tuple[CommittedBatches, ...] = ()

    def last_batch(self, job: str) -> int:
        """``job``'s newest batch this sink committed; -1 when its records name none."""
        return max((found.last_batch for found in self.jobs if found.job == job), default=-1)
