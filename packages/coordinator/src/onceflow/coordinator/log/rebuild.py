"""Rebuilding lost decisions from the participants' own commit records (``onceflow txn rebuild``).

Every sink records which batches it committed (the ``onceflow_commits`` table, the Kafka sink's
markers), and a batch reaches those records only after its COMMIT decision was logged. So a batch
that any sink committed was decided COMMIT, and the rebuilt log says so:

- each job's last committed batch is the newest batch any sink committed (a shard of a sharded sink
  counts as a sink of its own: it keeps its own commit records and takes its own Commit);
- a batch some sink committed and another still holds prepared is COMMITTING: the coordinator that
  replays the rebuilt log delivers Commit to the sinks that have not applied it (they redo it from
  their prepared state);
- the other committed batches (within the retention) are COMMITTED, so nothing committed is ever
  read as ABORTED;
- a batch prepared somewhere and committed nowhere has no decision anyone can prove: it is left
  out, so it is presumed aborted, as the protocol presumes for every undecided batch. The plan
  names each one. (A COMMITTING decision that no sink had applied yet when the log was lost is
  the one thing no rebuild can recover: that is why the log is replicated.)

The writer epochs are lost with the log: every rebuilt job gets ``epoch``, chosen higher than any
epoch a writer can hold (each registration adds one), so every writer from before the loss is
fenced and a restarted driver registers anew (and re-declares its participants and bindings).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from onceflow.contract import ParticipantRef, ParticipantVote, TransactionId, TransactionState
from onceflow.contract.shards import WHOLE_SINK, Shard
from onceflow.coordinator.log.records import LogRecord
from onceflow.coordinator.model import JobState, Transaction

REBUILT_BY = "onceflow txn rebuild"
COMMITTING, COMMITTED = TransactionState.COMMITTING, TransactionState.COMMITTED


@dataclass(frozen=True, slots=True)
class SinkCommits:
    """One sink's commit records for one job: its last batch, the batches it lists, and whether every
    batch at or below ``last_batch`` counts as committed (``cumulative``: the Kafka sink's markers)."""

    last_batch: int
    batches: frozenset[int]
    cumulative: bool = False

    def committed(self, batch: int) -> bool:
        return batch <= self.last_batch if self.cumulative else batch in self.batches


@dataclass(frozen=True, slots=True)
class SinkEvidence:
    """What one sink (or ``shard`` of one) of a participant server at ``target`` knows: its commit
    records per job and the transactions it holds prepared."""

    sink: str
    target: str
    commits: dict[str, SinkCommits] = field(default_factory=dict)
    prepared: tuple[TransactionId, ...] = ()
    shard: Shard = WHOLE_SINK

    @property
    def ref(self) -> ParticipantRef:
        """The participant it is in a transaction (its :attr:`ParticipantRef.name`: ``<sink>#<index>`` for a shard)."""
        return ParticipantRef(self.sink, self.target, shard=self.shard)


@dataclass(frozen=True, slots=True)
class RebuildPlan:
    """The rebuilt jobs and transactions, and the prepared batches left to presumed abort."""

    jobs: tuple[JobState, ...]
    committed: tuple[Transaction, ...]
    committing: tuple[Transaction, ...]
    #: ``(participant, txn)`` prepared there and committed by no sink: presumed aborted.
    presumed_aborted: tuple[tuple[str, TransactionId], ...]

    def records(self) -> list[LogRecord]:
        """Every record to append after the genesis marker: jobs first, then transactions by job and batch."""
        txns = sorted((*self.committed, *self.committing), key=lambda txn: (txn.id.job, txn.id.batch))
        return [*self.jobs, *txns]


def plan_rebuild(evidence: Sequence[SinkEvidence], *, epoch: int, retain_batches: int) -> RebuildPlan:
    """The decisions ``evidence`` proves (see the module docstring).

    Steps:
        1. Per job: its sinks (those with commit records or a prepared transaction of it) and its
           last committed batch (the newest any sink committed).
        2. Each batch some sink committed: COMMITTING if a sink holds it prepared, else COMMITTED
           (only within ``retain_batches`` of the last one; 0 keeps all).
        3. Each batch prepared somewhere and committed nowhere: presumed aborted (no record).
    """
    now = time.time()
    jobs: list[JobState] = []
    committed: list[Transaction] = []
    committing: list[Transaction] = []
    presumed: list[tuple[str, TransactionId]] = []
    for job in sorted({job for sink in evidence for job in _jobs_of(sink)}):
        # Step 1
        sinks = [sink for sink in evidence if job in _jobs_of(sink)]
        refs = tuple(sink.ref for sink in sinks)
        last = max((sink.commits[job].last_batch for sink in sinks if job in sink.commits), default=-1)
        jobs.append(JobState(job, epoch=epoch, writer_id=REBUILT_BY, last_committed_batch=last, participants=refs))
        prepared = {txn.batch for sink in sinks for txn in sink.prepared if txn.job == job}
        listed = {batch for sink in sinks if job in sink.commits for batch in sink.commits[job].batches}
        oldest = last - retain_batches if retain_batches > 0 else -1
        for batch in sorted(listed | prepared):
            txn_id = TransactionId(job, batch)
            holders = [sink for sink in sinks if txn_id in sink.prepared]
            appliers = [sink for sink in sinks if job in sink.commits and sink.commits[job].committed(batch)]
            if not appliers:
                # Step 3
                presumed.extend((sink.ref.name, txn_id) for sink in holders)
                continue
            # Step 2
            if holders:
                committing.append(
                    _txn(txn_id, COMMITTING, epoch=epoch, sinks=[*appliers, *holders], acked=appliers, now=now)
                )
            elif batch > oldest:
                committed.append(_txn(txn_id, COMMITTED, epoch=epoch, sinks=appliers, acked=appliers, now=now))
    return RebuildPlan(tuple(jobs), tuple(committed), tuple(committing), tuple(presumed))


def _jobs_of(sink: SinkEvidence) -> set[str]:
    return set(sink.commits) | {txn.job for txn in sink.prepared}


def _txn(
    txn_id: TransactionId,
    state: TransactionState,
    *,
    epoch: int,
    sinks: Iterable[SinkEvidence],
    acked: Sequence[SinkEvidence],
    now: float,
) -> Transaction:
    refs = {sink.ref.name: sink.ref for sink in sinks}
    acked_names = {sink.ref.name for sink in acked}
    return Transaction(
        id=txn_id,
        state=state,
        writer_epoch=epoch,
        files=(),
        participants=tuple(refs.values()),
        votes=tuple(ParticipantVote(name, prepared=True, acknowledged=name in acked_names) for name in refs),
        started_at=now,
        updated_at=now,
        reason=f"rebuilt from the participants' commit records by {REBUILT_BY}",
    )
