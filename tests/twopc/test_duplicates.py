"""CommitTransaction is idempotent per ``<job>:<batch>`` (docs/design.md, "Spark -> sinks")."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from onceflow.testing.coordinator.cluster import SINKS, TwoPhaseCommitCluster

from .driver import COMMITTED, JOB, batch_rows, expected_rows

#: Run on the embedded broker and on Apache Kafka (issue 15: the guarantees, tested on both).
BROKERS = ("embedded", "apache-kafka")


def test_duplicate_commit_transaction_changes_nothing(cluster: TwoPhaseCommitCluster) -> None:
    """Steps:
    1. Commit batches 0 and 1; note every sink's rows and commits.
    2. Call CommitTransaction for batch 1 again three times (a driver restarted after the
       coordinator committed but before Spark's own commit log): each answers COMMITTED, although
       its staged files have been garbage-collected meanwhile.
    3. Re-run batch 0 with freshly staged files of a new task attempt: COMMITTED, nothing
       re-prepared.
    4. Restart the coordinator (the answer now comes from the replayed log): COMMITTED again.
    5. No sink changed: the same rows (no duplicate record in Kafka), the same commits.
    """
    # Step 1
    epoch = cluster.register(JOB)
    files = {batch: cluster.stage(JOB, batch, batch_rows(batch)) for batch in (0, 1)}
    for batch, staged in files.items():
        assert cluster.commit(JOB, epoch, batch, staged).state == COMMITTED
    rows, commits = cluster.sink_rows(), cluster.committed_batches(JOB)
    assert rows == {sink: expected_rows([batch_rows(0), batch_rows(1)]) for sink in SINKS}
    # Step 2
    for _ in range(3):
        response = cluster.commit(JOB, epoch, 1, files[1])
        assert (response.state, response.reason) == (COMMITTED, "")
    # Step 3
    assert cluster.commit(JOB, epoch, 0, cluster.stage(JOB, 0, batch_rows(0), attempt=1)).state == COMMITTED
    # Step 4
    cluster.coordinator.stop()
    cluster.coordinator.start()
    assert cluster.commit(JOB, epoch, 1, files[1]).state == COMMITTED
    # Step 5
    assert cluster.sink_rows() == rows
    assert cluster.committed_batches(JOB) == commits == {"sqlite": [0, 1], "postgres": [0, 1]}
    for sink, process in cluster.participants.items():
        assert process.log_tail(400).count("prepare.vote_yes") == 2, sink


def test_concurrent_duplicate_calls_join_one_attempt(cluster: TwoPhaseCommitCluster) -> None:
    """Four concurrent CommitTransaction calls for the same batch (a retry racing the original)
    all answer COMMITTED; one attempt was prepared, and every sink holds the batch once."""
    epoch = cluster.register(JOB)
    files = cluster.stage(JOB, 0, batch_rows(0, 50))
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: cluster.commit(JOB, epoch, 0, files).state, range(4)))
    assert answers == [COMMITTED] * 4
    assert cluster.sink_rows() == {sink: expected_rows([batch_rows(0, 50)]) for sink in SINKS}
    assert cluster.transaction(JOB, 0).state == COMMITTED
    for sink, process in cluster.participants.items():
        assert process.log_tail(400).count("prepare.vote_yes") == 1, sink
