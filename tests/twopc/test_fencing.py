"""Fencing: a zombie Spark driver (an old writer epoch) and a zombie coordinator (an old instance on the log)."""

from __future__ import annotations

import grpc
import pytest

from onceflow.contract import TransactionId, TransactionState
from onceflow.contract.clients import CoordinatorClient
from onceflow.coordinator.service import EXIT_FENCED
from onceflow.testing.coordinator.cluster import SINKS, TwoPhaseCommitCluster
from onceflow.testing.coordinator.process import CoordinatorProcess

from .driver import COMMITTED, JOB, NOTHING_PREPARED, batch_rows, expected_rows

#: Run on the embedded broker and on Apache Kafka (issue 15: the guarantees, tested on both).
BROKERS = ("embedded", "apache-kafka")


def test_a_zombie_writer_is_fenced_by_the_next_registration(cluster: TwoPhaseCommitCluster) -> None:
    """Steps:
    1. Driver 1 registers and commits batch 0.
    2. Driver 2 (a restarted Spark driver of the same job) registers: it gets a higher epoch.
    3. Driver 1, a zombie now, tries to commit batch 1: FAILED_PRECONDITION naming the job; no
       sink sees anything of batch 1.
    4. Driver 2 commits batch 1.
    """
    # Step 1
    old = cluster.register(JOB, "driver-1")
    assert cluster.commit(JOB, old, 0, cluster.stage(JOB, 0, batch_rows(0))).state == COMMITTED
    # Step 2
    new = cluster.register(JOB, "driver-2")
    assert new == old + 1
    # Step 3
    files = cluster.stage(JOB, 1, batch_rows(1))
    with pytest.raises(grpc.RpcError) as fenced:
        cluster.commit(JOB, old, 1, files)
    assert fenced.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    details = fenced.value.details() or ""
    assert f"job {JOB!r}" in details and "fenced" in details and f"epoch {new}" in details
    assert cluster.prepared() == NOTHING_PREPARED
    assert cluster.transaction(JOB, 1).state == TransactionState.ABORTED  # unknown: presumed abort
    with pytest.raises(grpc.RpcError) as fenced_abort:
        cluster.client.abort_transaction(TransactionId(JOB, 1), old, timeout_s=10)
    assert fenced_abort.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    # Step 4
    assert cluster.commit(JOB, new, 1, files).state == COMMITTED
    expected = expected_rows([batch_rows(0), batch_rows(1)])
    assert cluster.sink_rows() == {sink: expected for sink in SINKS}


def test_a_zombie_coordinator_is_fenced_by_a_new_instance_and_exits(cluster: TwoPhaseCommitCluster) -> None:
    """Steps:
    1. The driver registers with coordinator A and commits batch 0.
    2. Coordinator B starts on the same Kafka log (a standby taking over): opening the log fences
       A. A still runs, not knowing yet.
    3. The driver, still talking to A, commits batch 1: A's first log write fails, so the call is
       UNAVAILABLE ("fenced") before any participant was asked to prepare, and A exits with
       code 3.
    4. B, which replayed the log (the job, its epoch and participants), commits batch 1.
    """
    # Step 1
    epoch = cluster.register(JOB)
    assert cluster.commit(JOB, epoch, 0, cluster.stage(JOB, 0, batch_rows(0))).state == COMMITTED
    zombie = cluster.coordinator
    # Step 2
    standby = CoordinatorProcess(cluster.work_dir / "coordinator-b", zombie.settings | {"server": {"port": 0}})
    standby.start()
    try:
        assert zombie.is_running()
        # Step 3
        files = cluster.stage(JOB, 1, batch_rows(1))
        with pytest.raises(grpc.RpcError) as fenced:
            cluster.commit(JOB, epoch, 1, files)
        assert fenced.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "fenced" in (fenced.value.details() or "")
        assert zombie.wait(10) == EXIT_FENCED
        assert "coordinator.fatal" in zombie.log_tail(100)
        assert cluster.prepared() == NOTHING_PREPARED
        # Step 4
        with CoordinatorClient(standby.target) as standby_client:
            assert standby_client.commit_transaction(TransactionId(JOB, 1), epoch, files).state == COMMITTED
    finally:
        standby.stop()
    expected = expected_rows([batch_rows(0), batch_rows(1)])
    assert cluster.sink_rows() == {sink: expected for sink in SINKS}
