"""The coordinator's rows of the failure matrix, with the coordinator process really dying.

The crash hook (``ONCEFLOW_COORDINATOR_TEST_CRASH_AFTER``) makes the coordinator ``os._exit(137)``
at an exact step of the protocol, which a timed ``kill -9`` cannot hit reliably; the participants
are real processes holding real prepared state (SQLite staging, a PostgreSQL prepared
transaction, an open Kafka transaction plus its journal).

One crash point on each side of the decision runs in the quick suite; the other two are marked
slow (they still run in ``make test``), to keep the quick suite short.
"""

from __future__ import annotations

import pytest

from onceflow.testing.coordinator.cluster import TwoPhaseCommitCluster
from onceflow.testing.faults import CRASH_EXIT_CODE
from onceflow.testing.faults.coordinator import CRASH_ENV

from .conftest import ClusterFactory
from .driver import ABORTED, COMMITTED, JOB, NO_ROWS, NOTHING_PREPARED, batch_rows, commit_into_a_crash, expected_rows

#: Run on the embedded broker and on Apache Kafka (issue 15: the guarantees, tested on both).
BROKERS = ("embedded", "apache-kafka")

HELD = {"sqlite": [f"{JOB}:0"], "postgres": [f"onceflow:postgres:{JOB}:0"], "kafka": [f"{JOB}:0"]}


def _crash_during_commit(cluster_factory: ClusterFactory, point: str) -> tuple[TwoPhaseCommitCluster, int]:
    """Start a cluster whose coordinator dies at ``point`` during the first CommitTransaction of batch 0.

    The call fails UNAVAILABLE, or at ``commit-delivered`` may be answered COMMITTED first
    (:func:`~.driver.commit_into_a_crash`).
    """
    cluster = cluster_factory(coordinator_env={CRASH_ENV: point})
    epoch = cluster.register(JOB)
    files = cluster.stage(JOB, 0, batch_rows(0))
    commit_into_a_crash(cluster, epoch, 0, files, point)
    assert cluster.coordinator.wait(10) == CRASH_EXIT_CODE
    assert f"point={point}" in cluster.coordinator.log_tail()
    del cluster.coordinator.env[CRASH_ENV]
    return cluster, epoch


@pytest.mark.parametrize("point", ["commit-logged", pytest.param("commit-delivered", marks=pytest.mark.slow)])
def test_coordinator_killed_after_the_decision_the_new_instance_commits(
    cluster_factory: ClusterFactory, point: str
) -> None:
    """Steps:
    1. The coordinator dies after logging COMMITTING: before any Commit was sent
       (``commit-logged``; every sink still holds the batch prepared), or after every participant
       acked but before COMMITTED was logged (``commit-delivered``).
    2. A new coordinator process replays the log and re-sends Commit until every participant acks,
       then logs COMMITTED.
    3. Every sink holds the batch exactly once (a re-sent Commit is idempotent, even for Kafka).
    4. The driver, retrying its commit, is told COMMITTED.
    """
    # Step 1
    cluster, epoch = _crash_during_commit(cluster_factory, point)
    if point == "commit-logged":
        assert cluster.prepared() == HELD
        assert cluster.sink_rows() == NO_ROWS
    # Step 2
    cluster.coordinator.start()
    cluster.wait_for_state(JOB, 0, COMMITTED)
    assert "recovery.commit" in cluster.coordinator.log_tail(200)
    # Step 3
    expected = expected_rows([batch_rows(0)])
    assert cluster.sink_rows() == {"kafka": expected, "sqlite": expected, "postgres": expected}
    assert cluster.prepared() == NOTHING_PREPARED
    # Step 4
    assert cluster.commit(JOB, epoch, 0, cluster.stage(JOB, 0, batch_rows(0), attempt=1)).state == COMMITTED
    assert cluster.sink_rows()["kafka"] == expected


@pytest.mark.parametrize("point", [pytest.param("prepare-logged", marks=pytest.mark.slow), "votes-collected"])
def test_coordinator_killed_before_the_decision_is_presumed_abort_and_the_retry_commits(
    cluster_factory: ClusterFactory, point: str
) -> None:
    """Steps:
    1. The coordinator dies before a decision is logged: after PREPARING was logged and before any
       Prepare (``prepare-logged``), or after every participant voted yes (``votes-collected``,
       so every sink holds the batch prepared).
    2. The new instance finds no decision: presumed abort. It sends Abort to every participant
       and logs ABORTED; no sink holds anything of the batch.
    3. The driver retries the batch: a new attempt commits, and every sink holds it exactly once.
    """
    # Step 1
    cluster, epoch = _crash_during_commit(cluster_factory, point)
    assert cluster.prepared() == (HELD if point == "votes-collected" else NOTHING_PREPARED)
    # Step 2
    cluster.coordinator.start()
    aborted = cluster.wait_for_state(JOB, 0, ABORTED)
    assert "presumed abort" in aborted.reason
    assert cluster.prepared() == NOTHING_PREPARED
    assert cluster.sink_rows() == NO_ROWS
    # Step 3
    files = cluster.stage(JOB, 0, batch_rows(0), attempt=1)
    response = cluster.commit(JOB, epoch, 0, files)
    assert response.state == COMMITTED, response.reason
    expected = expected_rows([batch_rows(0)])
    assert cluster.sink_rows() == {"kafka": expected, "sqlite": expected, "postgres": expected}
    assert cluster.prepared() == NOTHING_PREPARED
