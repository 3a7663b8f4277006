"""The happy path of docs/design.md's "Spark -> sinks" hop across the three real sinks."""

from __future__ import annotations

import time

from onceflow.core.avro import IpCount
from onceflow.testing.coordinator.cluster import TwoPhaseCommitCluster

from .driver import COMMITTED, JOB, NOTHING_PREPARED, batch_rows, expected_rows

#: Run on the embedded broker and on Apache Kafka (issue 15: the guarantees, tested on both).
BROKERS = ("embedded", "apache-kafka")

BATCHES = 200


def test_200_batches_land_exactly_once_in_kafka_sqlite_and_postgres(cluster: TwoPhaseCommitCluster) -> None:
    """Steps:
    1. The driver registers and names the three participants (one process per sink).
    2. For each of 200 batches it stages two Arrow IPC files (as two Spark tasks would) and calls
       CommitTransaction, which answers COMMITTED.
    3. Kafka (read_committed), SQLite and PostgreSQL each hold exactly the staged rows, and the
       database sinks' commits tables list every batch once; nothing is left prepared.
    4. The coordinator reports every batch COMMITTED and has deleted the staged files.
    """
    # Step 1
    epoch = cluster.register(JOB)
    # Step 2
    staged: list[list[IpCount]] = []
    for batch in range(BATCHES):
        rows = batch_rows(batch, 8)
        staged.append(rows)
        files = cluster.stage(JOB, batch, rows[:5], rows[5:])
        response = cluster.commit(JOB, epoch, batch, files)
        assert response.state == COMMITTED, (batch, response.reason)
    # Step 3
    expected = expected_rows(staged)
    assert len(expected) == BATCHES * 8
    for sink, found in cluster.sink_rows().items():
        assert found == expected, f"{sink} holds {len(found)} rows, expected {len(expected)}"
    assert cluster.committed_batches(JOB) == {"sqlite": list(range(BATCHES)), "postgres": list(range(BATCHES))}
    assert cluster.prepared() == NOTHING_PREPARED
    # Step 4
    listed = cluster.client.list_transactions(JOB, limit=1000, timeout_s=10)
    assert sorted(t.id.batch for t in listed) == list(range(BATCHES))
    assert {t.state for t in listed} == {COMMITTED}
    assert all(p.prepared and p.acknowledged for t in listed for p in t.votes)
    deadline = time.monotonic() + 10
    while any((cluster.staging_root / JOB).iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list((cluster.staging_root / JOB).iterdir()) == [], "staged files are garbage-collected after END"
