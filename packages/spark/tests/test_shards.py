"""The IP-count job (local[2]) writing through sinks served by two participant processes each.

The job names the Kafka and PostgreSQL sinks' shards by their targets (``targets = [...]``), next to
a SQLite sink served by one process; every shard votes in every batch's transaction and writes the
keys it owns (the default IP-count bindings are upserts by key). The sinks end EXACT, and the replay
audit, given shard 0's participant config, reads each sink whole.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from onceflow.core.topics import SOURCE_TOPIC
from onceflow.sinks.server.settings import ParticipantSettings
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.replay import audit_job, render
from onceflow.spark.runner import start_query
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.coordinator.cluster import SINKS, TwoPhaseCommitCluster, running_cluster
from onceflow.testing.sinks.postgres import PostgresServer

from .conftest import job_settings
from .system import Key, encoded_events, end_input, produce_events, recent_model, truth

pytestmark = pytest.mark.slow

EVENTS = 4_000
#: Participant processes per sink.
SHARDS = {"kafka": 2, "postgres": 2, "sqlite": 1}


@pytest.fixture
def cluster(tmp_path: Path, postgres_server: PostgresServer) -> Iterator[TwoPhaseCommitCluster]:
    """A broker, a coordinator and the participant processes of :data:`SHARDS`."""
    with running_cluster(
        tmp_path,
        postgres_server,
        shards=SHARDS,
        coordinator_settings={"prepare_timeout_ms": 30_000, "commit_wait_ms": 30_000},
    ) as sharded:
        yield sharded


def _results(cluster: TwoPhaseCommitCluster) -> dict[str, Counter[tuple[Key, int]]]:
    """Each sink's (window_start, ip) -> count rows, counted (a duplicate shows as 2)."""
    return {
        sink: Counter(((start, ip), count) for start, _, ip, count in rows)
        for sink, rows in cluster.sink_rows().items()
    }


def _wait_exact(cluster: TwoPhaseCommitCluster, expected: dict[Key, int], timeout: float = 240.0) -> None:
    want = Counter(expected.items())
    deadline = time.monotonic() + timeout
    while True:
        got = _results(cluster)
        if all(rows == want for rows in got.values()):
            return
        if time.monotonic() > deadline:
            wrong = {sink: (sum(rows.values()), len(rows - want), len(want - rows)) for sink, rows in got.items()}
            raise AssertionError(f"(rows, unexpected, missing) per sink: {wrong} of {len(want)}\n{cluster.logs()}")
        time.sleep(1.0)


def test_a_spark_job_writes_through_two_shards_of_every_sink_exactly(
    spark: SparkSession, cluster: TwoPhaseCommitCluster, tmp_path: Path
) -> None:
    """Steps:
    1. 4,000 generated events in the source topic, then the end of input (every window closes).
    2. The job runs with the sinks' shards as its participants (``targets``) until every sink holds
       every window: each equals the ground truth, no row twice.
    3. Every shard voted yes with rows of its own, and the sinks are committed through the last batch
       (each shard's commit records, read whole).
    4. The replay audit with shard 0's participant config: EXACT for every sink.
    """
    bootstrap = cluster.bootstrap_servers
    # Step 1
    create_topic(bootstrap, SOURCE_TOPIC, partitions=2)
    model = recent_model(21)
    produce_events(bootstrap, encoded_events(model, 0, EVENTS))
    end_input(bootstrap)
    expected = truth(model, EVENTS)
    # Step 2
    settings: SparkJobSettings = job_settings(
        bootstrap,
        tmp_path / "job",
        guarantee="exactly-once",
        staging_root=str(cluster.staging_root),
        coordinator={"target": cluster.coordinator.target},
        participants=[{"sink": s, "targets": [p.target for p in cluster.processes_of(s)]} for s in SINKS],
        source={"max_offsets_per_trigger": 2_000},
    )
    query = start_query(spark, settings)
    try:
        _wait_exact(cluster, expected)
    finally:
        query.stop()
    # Step 3
    for name, process in cluster.participants.items():
        rows = [
            int(n) for n in re.findall(rf"prepare\.vote_yes .*job={settings.job} .*rows=(\d+)", process.log_tail(2000))
        ]
        assert sum(rows) > 0, f"{name} never wrote a row:\n{process.log_tail(30)}"
    last = cluster.last_committed(settings.job)
    assert len(set(last.values())) == 1 and min(last.values()) >= 2, last
    # Step 4
    participant = ParticipantSettings.model_validate(
        {"sinks": [cluster.participant_settings(sink, 0)["sinks"][0] for sink in SINKS]}
    )
    audit = audit_job(spark, settings, participant)
    report = render([audit])
    assert audit.exact, report
    assert audit.batch == min(last.values()), report
    assert {b.binding.sink for b in audit.bindings} == set(SINKS), report
