"""Batches staged on an S3 API store (S3Proxy, a real process) through the whole two-phase commit.

The driver (the test) stages Arrow files under ``s3://onceflow/<prefix>``, the participants read and
verify them from there, and the coordinator deletes them after the decision. The store's credentials
reach every process as the standard AWS variables, and never one of their log lines or metrics.
"""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

import grpc
import pytest

from onceflow.contract.staging import parse_staging_uri
from onceflow.testing.coordinator.cluster import TwoPhaseCommitCluster, wait_for_log
from onceflow.testing.faults import CRASH_EXIT_CODE
from onceflow.testing.faults.coordinator import CRASH_ENV
from onceflow.testing.s3 import S3ProxyProcess
from onceflow.testing.s3.fixtures import S3ProxyFactory

from .conftest import ClusterFactory
from .driver import ABORTED, COMMITTED, JOB, NOTHING_PREPARED, batch_rows, commit_until_decided, expected_rows

BATCHES = 6


def _metrics_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _s3_cluster(
    cluster_factory: ClusterFactory, proxy: S3ProxyProcess, prefix: str, **options: object
) -> TwoPhaseCommitCluster:
    return cluster_factory(staging_uri=proxy.uri(prefix), env=proxy.client_env(), **options)


def _staged_batches(cluster: TwoPhaseCommitCluster) -> list[str]:
    return cluster.store.list_names(parse_staging_uri(cluster.staging_uri).child(JOB))


def test_batches_staged_on_s3_commit_into_every_sink(
    cluster_factory: ClusterFactory, s3proxy: S3ProxyProcess, tmp_path: Path
) -> None:
    """Steps:
    1. Coordinator and participants probe ``s3://onceflow/<test>/staging`` at start.
    2. Each batch is two Arrow files on S3; CommitTransaction answers COMMITTED.
    3. Kafka, SQLite and PostgreSQL hold exactly the staged rows; nothing stays prepared.
    4. The coordinator deleted every batch's objects.
    5. No log line and no metric of any process shows the secret key or the key id.
    """
    metrics = _metrics_port()
    cluster = _s3_cluster(
        cluster_factory, s3proxy, f"{tmp_path.name}/staging", coordinator_settings={"metrics": {"port": metrics}}
    )
    # Step 1
    for process in (cluster.coordinator, *cluster.participants.values()):
        assert "staging.probed" in process.log_tail(200) and "s3://onceflow/" in process.log_tail(200)
    # Step 2
    epoch = cluster.register(JOB)
    staged = []
    for batch in range(BATCHES):
        rows = batch_rows(batch, 6)
        staged.append(rows)
        files = cluster.stage(JOB, batch, rows[:4], rows[4:])
        assert all(f.uri.startswith("s3://onceflow/") for f in files)
        # as the driver does: an aborted attempt (a participant slow to accept its first call) is retried
        assert commit_until_decided(cluster, epoch, batch, files)[0].state == COMMITTED
    # Step 3
    expected = expected_rows(staged)
    assert cluster.sink_rows() == {"kafka": expected, "sqlite": expected, "postgres": expected}
    assert cluster.prepared() == NOTHING_PREPARED
    # Step 4
    deadline = time.monotonic() + 20
    while _staged_batches(cluster) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _staged_batches(cluster) == [], "staged objects are garbage-collected after the decision"
    # Step 5
    exposed = urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=10).read().decode()
    for text in (exposed, *(p.log_since_start() for p in (cluster.coordinator, *cluster.participants.values()))):
        assert s3proxy.secret_access_key not in text and s3proxy.access_key_id not in text


@pytest.mark.slow
def test_a_kill_9_of_the_store_loses_nothing(
    cluster_factory: ClusterFactory, s3proxy_factory: S3ProxyFactory, tmp_path: Path
) -> None:
    """Steps:
    1. Batch 0 is prepared everywhere from S3; the coordinator dies right after logging COMMIT.
    2. ``kill -9`` S3Proxy and the Kafka participant (its open Kafka transaction dies with it: only
       the staged files can redo the batch).
    3. While the store is down, a participant and a coordinator refuse to start: exit 2 with one
       line naming the staging root and the unreachable endpoint.
    4. S3Proxy restarts on the same port with the same objects; the coordinator recovers and the
       Kafka participant redoes batch 0 from S3: every sink holds it exactly once.
    5. Batch 1 is staged, then S3Proxy is killed again before its commit: the participants cannot
       read it, so it aborts; after the restart the driver's retry commits it, exactly once.
    """
    proxy = s3proxy_factory()
    cluster = _s3_cluster(cluster_factory, proxy, "staging", coordinator_env={CRASH_ENV: "commit-logged"})
    # Step 1
    epoch = cluster.register(JOB)
    files = cluster.stage(JOB, 0, batch_rows(0))
    with pytest.raises(grpc.RpcError):
        cluster.commit(JOB, epoch, 0, files)
    assert cluster.coordinator.wait(10) == CRASH_EXIT_CODE
    del cluster.coordinator.env[CRASH_ENV]
    # Step 2
    proxy.kill()
    kafka = cluster.participants["kafka"]
    kafka.kill()
    # Step 3
    for process in (kafka, cluster.coordinator):
        process.start(wait=False)
        assert process.wait(60) == 2, process.log_since_start()
        refusal = [line for line in process.log_since_start().splitlines() if "is unusable" in line]
        assert len(refusal) == 1 and f"staging root {cluster.staging_uri}" in refusal[0], refusal
        assert "unreachable" in refusal[0] and proxy.secret_access_key not in process.log_since_start()
    # Step 4
    proxy.start()
    cluster.coordinator.start()
    kafka.start()
    cluster.wait_for_state(JOB, 0, COMMITTED)
    assert "commit.redo_from_staging" in kafka.log_since_start()
    # Step 5
    files = cluster.stage(JOB, 1, batch_rows(1))
    proxy.kill()
    response = cluster.commit(JOB, epoch, 1, files)
    assert response.state == ABORTED and "unreachable" in response.reason, response
    proxy.start()
    answer, _ = commit_until_decided(cluster, epoch, 1, files)
    assert answer.state == COMMITTED
    expected = expected_rows([batch_rows(0), batch_rows(1)])
    assert cluster.sink_rows() == {"kafka": expected, "sqlite": expected, "postgres": expected}
    assert cluster.prepared() == NOTHING_PREPARED
    wait_for_log(kafka, "commit.done")
