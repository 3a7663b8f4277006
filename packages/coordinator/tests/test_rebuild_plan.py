"""The decisions ``onceflow txn rebuild`` proves from the sinks' commit records (no I/O)."""

from __future__ import annotations

from onceflow.contract import ParticipantRef, TransactionId, TransactionState
from onceflow.contract.shards import Shard
from onceflow.coordinator.log.rebuild import SinkCommits, SinkEvidence, plan_rebuild
from onceflow.coordinator.model import JobState

JOB = "ipcount"


def _sql(*batches: int) -> SinkCommits:
    return SinkCommits(max(batches), frozenset(batches))


def test_committed_somewhere_is_committed_and_prepared_nowhere_else_is_presumed_aborted() -> None:
    """Batch 3 is committed at PostgreSQL and Kafka but still prepared at SQLite: COMMITTING, with the
    acks of the sinks that applied it. Batch 4 is prepared at SQLite only: no sink committed it, so
    nothing proves a commit: presumed aborted. A job of one sink keeps its own last batch."""
    evidence = [
        SinkEvidence("sqlite", "h1:1", {JOB: _sql(0, 1, 2)}, (TransactionId(JOB, 3), TransactionId(JOB, 4))),
        SinkEvidence("postgres", "h1:1", {JOB: _sql(0, 1, 2, 3), "other": _sql(7)}),
        SinkEvidence("kafka", "h2:2", {JOB: SinkCommits(3, frozenset({3}), cumulative=True)}),
    ]
    plan = plan_rebuild(evidence, epoch=10**12, retain_batches=1000)

    refs = (ParticipantRef("sqlite", "h1:1"), ParticipantRef("postgres", "h1:1"), ParticipantRef("kafka", "h2:2"))
    assert plan.jobs == (
        JobState(JOB, 10**12, "onceflow txn rebuild", 3, refs),
        JobState("other", 10**12, "onceflow txn rebuild", 7, (ParticipantRef("postgres", "h1:1"),)),
    )
    assert [(t.id, t.state) for t in plan.committed] == [
        (TransactionId(JOB, b), TransactionState.COMMITTED) for b in (0, 1, 2)
    ] + [(TransactionId("other", 7), TransactionState.COMMITTED)]
    (committing,) = plan.committing
    assert (committing.id, committing.state) == (TransactionId(JOB, 3), TransactionState.COMMITTING)
    assert {v.sink: (v.prepared, v.acknowledged) for v in committing.votes} == {
        "postgres": (True, True),
        "kafka": (True, True),
        "sqlite": (True, False),
    }
    assert {ref.sink for ref in committing.unacknowledged()} == {"sqlite"}
    assert plan.presumed_aborted == (("sqlite", TransactionId(JOB, 4)),)
    records = plan.records()
    assert records[:2] == list(plan.jobs)
    assert [r.id.batch for r in records[2:] if not isinstance(r, JobState)][:4] == [0, 1, 2, 3]


def test_only_the_retained_batches_get_a_record() -> None:
    plan = plan_rebuild([SinkEvidence("sqlite", "h:1", {JOB: _sql(*range(10))})], epoch=5, retain_batches=3)
    assert [t.id.batch for t in plan.committed] == [7, 8, 9]
    assert plan.jobs[0].last_committed_batch == 9


def test_nothing_committed_anywhere_rebuilds_an_empty_job() -> None:
    plan = plan_rebuild([SinkEvidence("kafka", "h:1", {}, (TransactionId(JOB, 0),))], epoch=5, retain_batches=0)
    assert plan.jobs == (JobState(JOB, 5, "onceflow txn rebuild", -1, (ParticipantRef("kafka", "h:1"),)),)
    assert (plan.committed, plan.committing) == ((), ())
    assert plan.presumed_aborted == (("kafka", TransactionId(JOB, 0)),)


def test_each_shard_of_a_sharded_sink_is_a_participant_of_its_own() -> None:
    """Shard 0 of the Kafka sink committed batch 5, shard 1 still holds it prepared: COMMITTING, with
    the Commit still owed to ``kafka#1`` (addressed with its shard)."""
    evidence = [
        SinkEvidence("kafka", "h:1", {JOB: SinkCommits(5, frozenset({5}), cumulative=True)}, (), Shard(0, 2)),
        SinkEvidence(
            "kafka",
            "h:2",
            {JOB: SinkCommits(4, frozenset({4}), cumulative=True)},
            (TransactionId(JOB, 5),),
            Shard(1, 2),
        ),
    ]
    plan = plan_rebuild(evidence, epoch=7, retain_batches=0)
    (job,) = plan.jobs
    assert [ref.name for ref in job.participants] == ["kafka#0", "kafka#1"]
    (committing,) = plan.committing
    assert committing.id == TransactionId(JOB, 5)
    assert [(ref.name, ref.shard) for ref in committing.unacknowledged()] == [("kafka#1", Shard(1, 2))]
