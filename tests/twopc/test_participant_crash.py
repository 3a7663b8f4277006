"""The participants' rows of the failure matrix, with participant processes really killed or unreachable.

To hold a participant exactly between its yes vote and the Commit, the coordinator is crash-hooked
at the commit point (``commit-logged``) or just before the decision (``votes-collected``): every
participant then holds the batch prepared and no Commit or Abort has been sent. The participants
are then ``kill -9``-ed, stopped, or paused (SIGSTOP: alive but unreachable) while the coordinator
restarts and delivers the decision.

Variants that repeat a scenario with the other outcome or another way of being unreachable are
marked slow (they still run in ``make test``), to keep the quick suite short.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import grpc
import pytest

from onceflow.contract import TransactionState
from onceflow.testing.coordinator.cluster import SINKS, TwoPhaseCommitCluster, wait_for_log
from onceflow.testing.faults import CRASH_EXIT_CODE
from onceflow.testing.faults.coordinator import CRASH_ENV

from .conftest import ClusterFactory
from .driver import (
    ABORTED,
    COMMITTED,
    COMMITTING,
    JOB,
    NO_ROWS,
    NOTHING_PREPARED,
    batch_rows,
    commit_until_decided,
    expected_rows,
)

#: Run on the embedded broker and on Apache Kafka (issue 15: the guarantees, tested on both).
BROKERS = ("embedded", "apache-kafka")


def _prepared_everywhere_coordinator_lost(
    cluster_factory: ClusterFactory, point: str, **options: Any
) -> tuple[TwoPhaseCommitCluster, int]:
    """A cluster that committed batch 0 with its coordinator crash-hooked at ``point``: the coordinator
    is dead and every sink holds the batch prepared. Returns the cluster and the writer epoch."""
    cluster = cluster_factory(coordinator_env={CRASH_ENV: point}, **options)
    epoch = cluster.register(JOB)
    with pytest.raises(grpc.RpcError):
        cluster.commit(JOB, epoch, 0, cluster.stage(JOB, 0, batch_rows(0)))
    assert cluster.coordinator.wait(10) == CRASH_EXIT_CODE
    del cluster.coordinator.env[CRASH_ENV]
    assert all(held for held in cluster.prepared().values()), cluster.prepared()
    return cluster, epoch


@pytest.mark.parametrize(
    ("point", "outcome"),
    [
        pytest.param("commit-logged", COMMITTED, id="commit"),
        pytest.param("votes-collected", ABORTED, id="abort", marks=pytest.mark.slow),
    ],
)
def test_participants_killed_holding_a_prepared_transaction_recover_with_the_decision(
    cluster_factory: ClusterFactory, point: str, outcome: TransactionState
) -> None:
    """Steps:
    1. Every participant votes yes for batch 0; the coordinator dies before sending the decision
       (COMMIT logged, or no decision at all: presumed abort).
    2. ``kill -9`` every participant process: each dies holding the batch prepared, and the
       prepared state survives (PostgreSQL keeps the prepared transaction, SQLite its staging
       rows, the Kafka sink its journal).
    3. Restart the participants while the coordinator is still down: they wait for the decision
       and do not listen meanwhile.
    4. Restart the coordinator: each participant asks for the outcome of its prepared transaction,
       applies it, then serves. The coordinator's state becomes final.
    5. Committed: every sink holds the batch exactly once. Aborted: no sink holds anything.
    """
    # Step 1
    cluster, _ = _prepared_everywhere_coordinator_lost(cluster_factory, point)
    # Step 2
    for process in cluster.participants.values():
        process.kill()
    held = cluster.prepared()
    assert held["postgres"] == [f"onceflow:postgres:{JOB}:0"]
    assert held["sqlite"] == held["kafka"] == [f"{JOB}:0"]
    # Step 3
    for process in cluster.participants.values():
        process.start(wait=False)
    for sink, process in cluster.participants.items():
        wait_for_log(process, "recover.coordinator_unreachable", times=2)
        assert not process.is_ready(), f"{sink} serves before its prepared transaction is resolved"
    # Step 4
    cluster.coordinator.start()
    for process in cluster.participants.values():
        process.wait_ready()
    cluster.wait_for_state(JOB, 0, outcome)
    for sink, process in cluster.participants.items():
        assert "recover.resolved" in process.log_tail(200), sink
    # Step 5
    assert cluster.prepared() == NOTHING_PREPARED
    expected = expected_rows([batch_rows(0)]) if outcome == COMMITTED else []
    assert cluster.sink_rows() == {sink: expected for sink in SINKS}


def test_participant_unreachable_during_prepare_aborts_the_transaction(cluster: TwoPhaseCommitCluster) -> None:
    """Steps:
    1. ``kill -9`` the PostgreSQL participant.
    2. CommitTransaction: its Prepare fails, so the coordinator aborts, naming the participant.
    3. The other sinks were told to abort: nothing is prepared or written anywhere.
    4. The participant restarts and the driver retries the batch until it commits (the
       coordinator's channel to the restarted participant may take a moment to reconnect).
    """
    epoch = cluster.register(JOB)
    files = cluster.stage(JOB, 0, batch_rows(0))
    # Step 1
    cluster.participants["postgres"].kill()
    # Step 2
    response = cluster.commit(JOB, epoch, 0, files)
    assert response.state == ABORTED
    assert "participant 'postgres' did not vote" in response.reason
    assert "UNAVAILABLE" in response.reason
    # Step 3
    assert {sink: held for sink, held in cluster.prepared().items() if sink != "postgres"} == {
        "sqlite": [],
        "kafka": [],
    }
    assert cluster.sink_rows() == NO_ROWS
    # Step 4
    cluster.participants["postgres"].start()
    response, _ = commit_until_decided(cluster, epoch, 0, files)
    assert response.state == COMMITTED
    expected = expected_rows([batch_rows(0)])
    assert cluster.sink_rows() == {sink: expected for sink in SINKS}
    assert cluster.prepared() == NOTHING_PREPARED


@pytest.mark.parametrize("how", [pytest.param("paused", marks=pytest.mark.slow), "stopped"])
def test_participant_unreachable_during_commit_is_retried_until_it_commits(
    cluster_factory: ClusterFactory, how: str
) -> None:
    """Steps:
    1. Every participant votes yes for batch 0 and the coordinator dies right after logging COMMIT.
    2. The SQLite participant becomes unreachable: ``paused`` (SIGSTOP, its calls time out) or
       ``stopped`` (its process is gone).
    3. A new coordinator delivers the commit: Kafka and PostgreSQL ack; SQLite's Commit is retried
       with backoff. The driver's retry is answered COMMITTING (the decision is final) and the
       transaction shows which sink has not acked.
    4. SQLite comes back (SIGCONT, or a restart that resolves its prepared transaction). The
       transaction becomes COMMITTED and every sink holds the batch exactly once.
    """
    # Step 1
    cluster, epoch = _prepared_everywhere_coordinator_lost(
        cluster_factory,
        "commit-logged",
        coordinator_settings={"commit_wait_ms": 1_000, "commit_retry": {"call_timeout_ms": 500, "max_backoff_ms": 300}},
    )
    sqlite = cluster.participants["sqlite"]
    # Step 2
    paused_pid = sqlite.pid
    assert paused_pid is not None
    if how == "paused":
        os.kill(paused_pid, signal.SIGSTOP)
    else:
        sqlite.stop()
    try:
        # Step 3
        cluster.coordinator.start()
        response = cluster.commit(JOB, epoch, 0, [])
        assert response.state == COMMITTING
        txn = cluster.transaction(JOB, 0)
        acked = {p.sink: p.acknowledged for p in txn.votes}
        assert acked == {"kafka": True, "sqlite": False, "postgres": True}
        assert next(p.error for p in txn.votes if p.sink == "sqlite")
        expected = expected_rows([batch_rows(0)])
        assert cluster.kafka_rows() == expected
        assert cluster.postgres_rows() == expected
        assert cluster.sqlite_rows() == []
        wait_for_log(cluster.coordinator, "txn.commit_retry txn=ipcount:0 job=ipcount batch=0 sink=sqlite", times=2)
    finally:
        # Step 4
        if how == "paused":
            os.kill(paused_pid, signal.SIGCONT)
        else:
            sqlite.start()
    cluster.wait_for_state(JOB, 0, COMMITTED)
    assert cluster.sink_rows() == {sink: expected for sink in SINKS}
    assert cluster.prepared() == NOTHING_PREPARED
    assert cluster.commit(JOB, epoch, 0, []).state == COMMITTED
