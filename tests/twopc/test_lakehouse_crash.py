"""The failure matrix on the lakehouse participants: Delta Lake and Iceberg tables, real processes, real kill -9.

Two kinds of crash points are reused:

- the coordinator's (``ONCEFLOW_COORDINATOR_TEST_CRASH_AFTER``): it dies before or after its
  decision while both participants hold the batch prepared (data files written outside the
  tables, journaled), and the participants are ``kill -9``-ed too;
- the participants' own (``ONCEFLOW_PARTICIPANT_TEST_CRASH_AT``, :mod:`onceflow.testing.faults.participant`): each
  dies (exit 137, as after ``kill -9``) at a step of its prepare, its commit, or its recovery.

Each test walks through its crash points on one cluster (a restart arms the next point), because a
participant process that loads delta-rs or pyiceberg takes seconds to start. Every scenario ends
with each table holding every committed batch exactly once, each table version onceflow committed
naming one batch, and nothing left prepared.
"""

from __future__ import annotations

from onceflow.contract import TransactionState
from onceflow.contract.staging import StagedFile
from onceflow.testing.coordinator.cluster import LAKEHOUSE_SINKS, TwoPhaseCommitCluster, wait_for_log
from onceflow.testing.faults import CRASH_EXIT_CODE
from onceflow.testing.faults.coordinator import CRASH_ENV
from onceflow.testing.faults.participant import CRASH_ENV as PARTICIPANT_CRASH_ENV

from .conftest import ClusterFactory
from .driver import (
    ABORTED,
    COMMITTED,
    COMMITTING,
    JOB,
    batch_rows,
    commit_into_a_crash,
    commit_until_decided,
    expected_rows,
)

NOTHING_PREPARED: dict[str, list[str]] = {sink: [] for sink in LAKEHOUSE_SINKS}


def _batches_committed(cluster: TwoPhaseCommitCluster) -> dict[str, list[str]]:
    """The ``<job>:<batch>`` of every table version onceflow committed, per sink, oldest first."""
    found = {}
    for sink in LAKEHOUSE_SINKS:
        with cluster.lakehouse_reader(sink) as reader:
            found[sink] = [txn for _, txn in reader.format.history("ip_counts") if txn is not None]
    return found


def _assert_exact(cluster: TwoPhaseCommitCluster, batches: int) -> None:
    expected = expected_rows([batch_rows(b) for b in range(batches)])
    assert cluster.sink_rows() == {sink: expected for sink in LAKEHOUSE_SINKS}, cluster.logs()
    assert cluster.prepared() == NOTHING_PREPARED
    assert _batches_committed(cluster) == {sink: [f"{JOB}:{b}" for b in range(batches)] for sink in LAKEHOUSE_SINKS}


def _commit(cluster: TwoPhaseCommitCluster, epoch: int, batch: int, *, attempt: int = 0) -> None:
    """Commit ``batch`` as the driver does (COMMITTING is a final decision too), then wait for COMMITTED."""
    commit_until_decided(cluster, epoch, batch, cluster.stage(JOB, batch, batch_rows(batch), attempt=attempt))
    cluster.wait_for_state(JOB, batch, COMMITTED, timeout=120)


def _restart_participants(cluster: TwoPhaseCommitCluster, crash_at: str | None, *, wait: bool = True) -> None:
    """``kill -9`` every participant still running and start them all again, armed to die at ``crash_at``."""
    for process in cluster.participants.values():
        process.kill()
        process.env.pop(PARTICIPANT_CRASH_ENV, None)
        if crash_at:
            process.env[PARTICIPANT_CRASH_ENV] = crash_at
        process.start(wait=False)
    if wait:
        for process in cluster.participants.values():
            process.wait_ready()


def _await_crash(cluster: TwoPhaseCommitCluster, point: str) -> None:
    for sink, process in cluster.participants.items():
        assert process.wait(30) == CRASH_EXIT_CODE, f"{sink} did not die at {point}"
        assert f"point={point}" in process.log_tail(), sink


def test_participants_dying_at_each_step_of_prepare_commit_and_recovery(cluster_factory: ClusterFactory) -> None:
    """Steps (both participants die at each point; the driver retries batch 0 as Spark would):
    1. ``prepare-midway``: prepare wrote the data files but did not journal them. No vote: ABORTED.
    2. ``prepare-durable``: the files are journaled, the yes vote is never sent: ABORTED; the restarted
       participants find the batch in their journal and abort it with the coordinator (files deleted).
    3. ``before-table-commit``: every participant voted yes, COMMIT is logged, and they die before
       their table commit: the driver is told COMMITTING.
    4. ``commit-midway``: restarted, each recovers batch 0 from its journal, commits the table,
       and dies before dropping the journal entry.
    5. Restarted once more, each finds the batch in its table and acknowledges it (no second
       commit); the coordinator logs COMMITTED. Batch 1 commits normally.
    6. Each table holds batches 0 and 1 exactly once, one table version each.
    """
    # Step 1
    cluster = cluster_factory(
        sinks=LAKEHOUSE_SINKS,
        participant_env={PARTICIPANT_CRASH_ENV: "prepare-midway"},
        coordinator_settings={"commit_wait_ms": 1_000},
    )
    epoch = cluster.register(JOB)
    files = cluster.stage(JOB, 0, batch_rows(0))
    assert cluster.commit(JOB, epoch, 0, files).state == ABORTED
    _await_crash(cluster, "prepare-midway")
    assert cluster.prepared() == NOTHING_PREPARED
    # Step 2
    _restart_participants(cluster, "prepare-durable")
    assert commit_until_decided_or_aborted(cluster, epoch, files) == ABORTED
    _await_crash(cluster, "prepare-durable")
    assert cluster.prepared() == {sink: [f"{JOB}:0"] for sink in LAKEHOUSE_SINKS}
    # Step 3
    _restart_participants(cluster, "before-table-commit")
    assert cluster.prepared() == NOTHING_PREPARED, "recovery aborted the journaled batch"
    assert cluster.sink_rows() == {sink: [] for sink in LAKEHOUSE_SINKS}
    assert commit_until_decided_or_aborted(cluster, epoch, files) == COMMITTING
    _await_crash(cluster, "before-table-commit")
    # Step 4
    _restart_participants(cluster, "commit-midway", wait=False)
    _await_crash(cluster, "commit-midway")
    assert cluster.prepared() == {sink: [f"{JOB}:0"] for sink in LAKEHOUSE_SINKS}
    # Step 5
    _restart_participants(cluster, None)
    for process in cluster.participants.values():
        assert "commit.table_holds_batch" in process.log_tail(100)
    cluster.wait_for_state(JOB, 0, COMMITTED)
    _commit(cluster, epoch, 1)
    # Step 6
    _assert_exact(cluster, 2)


def commit_until_decided_or_aborted(
    cluster: TwoPhaseCommitCluster, epoch: int, files: list[StagedFile]
) -> TransactionState:
    """CommitTransaction of batch 0 until a participant is reached (a restarted one may be
    unreachable for a moment): the state of the first attempt that got votes."""
    for _ in range(100):
        response = cluster.commit(JOB, epoch, 0, files)
        if response.state != ABORTED or "did not vote" not in response.reason or "UNAVAILABLE" not in response.reason:
            return response.state
        if all(process.returncode is not None for process in cluster.participants.values()):
            return response.state  # they voted by dying at the crash point
    raise AssertionError(f"no participant was reached: {cluster.logs()}")


def test_coordinator_and_participants_killed_around_the_decision(cluster_factory: ClusterFactory) -> None:
    """Steps, for each coordinator crash point in turn (batch 0 committed first):
    1. The coordinator dies at the point during the batch's CommitTransaction: after the votes (no
       decision: presumed abort), after logging COMMIT, or after every participant committed.
    2. ``kill -9`` both participants and restart them while the coordinator is down: a participant
       holding the batch prepared waits for the decision and does not serve.
    3. Restart the coordinator: each participant resolves its journaled batch (commits it from the
       journaled files, acknowledges a table that holds it, or aborts and deletes the files).
    4. An aborted batch is retried and commits. Every table holds every batch exactly once.
    """
    cluster = cluster_factory(sinks=LAKEHOUSE_SINKS)
    epoch = cluster.register(JOB)
    _commit(cluster, epoch, 0)
    for batch, (point, outcome) in enumerate(
        [("votes-collected", ABORTED), ("commit-logged", COMMITTED), ("commit-delivered", COMMITTED)], start=1
    ):
        # Step 1
        cluster.coordinator.stop()
        cluster.coordinator.env[CRASH_ENV] = point
        cluster.coordinator.start()
        files = cluster.stage(JOB, batch, batch_rows(batch))
        commit_into_a_crash(cluster, epoch, batch, files, point)
        assert cluster.coordinator.wait(60) == CRASH_EXIT_CODE
        del cluster.coordinator.env[CRASH_ENV]
        holding = point != "commit-delivered"
        held = [f"{JOB}:{batch}"] if holding else []
        assert cluster.prepared() == {sink: held for sink in LAKEHOUSE_SINKS}, point
        # Step 2
        _restart_participants(cluster, None, wait=not holding)
        for sink, process in cluster.participants.items():
            if holding:
                wait_for_log(process, "recover.coordinator_unreachable", times=2, timeout=120)
                assert not process.is_ready(), f"{sink} serves before its prepared batch is resolved ({point})"
        # Step 3
        cluster.coordinator.start()
        for process in cluster.participants.values():
            process.wait_ready()
        cluster.wait_for_state(JOB, batch, outcome)
        # Step 4
        if outcome == ABORTED:
            before = expected_rows([batch_rows(b) for b in range(batch)])
            assert cluster.sink_rows() == {sink: before for sink in LAKEHOUSE_SINKS}
            _commit(cluster, epoch, batch, attempt=1)
        _assert_exact(cluster, batch + 1)
