"""Fixtures of the cross-package two-phase-commit tests: a real broker process, a real PostgreSQL
server (``postgres_dsn``, from the onceflow-sinks pytest plugin), a coordinator process on the
Kafka transaction log and one participant process per sink (Kafka, SQLite, PostgreSQL)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from onceflow.broker.embedded import BrokerProcess
from onceflow.testing.coordinator.cluster import TwoPhaseCommitCluster

ClusterFactory = Callable[..., TwoPhaseCommitCluster]


@pytest.fixture
def cluster_factory(
    kafka_broker: BrokerProcess, postgres_dsn: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[ClusterFactory]:
    """``cluster_factory(start=True, **options)``: a :class:`TwoPhaseCommitCluster` on the test's broker
    (the embedded one, and Apache Kafka in the modules whose ``BROKERS`` name it) and database
    (options as its constructor's); every cluster is stopped after the test, and its
    process logs are printed when the test failed."""
    clusters: list[TwoPhaseCommitCluster] = []

    def factory(*, start: bool = True, **options: Any) -> TwoPhaseCommitCluster:
        cluster = TwoPhaseCommitCluster(
            tmp_path / f"cluster-{len(clusters)}",
            bootstrap_servers=kafka_broker.bootstrap_servers,
            postgres_dsn=postgres_dsn,
            **options,
        )
        clusters.append(cluster)
        return cluster.start() if start else cluster

    yield factory
    report = getattr(request.node, "rep_call", None)
    for cluster in clusters:
        if report is not None and report.failed:
            sys.stderr.write(f"\n{cluster.logs(80)}\n")
        cluster.stop()


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> TwoPhaseCommitCluster:
    """A started cluster with the three sinks and the fast test timings."""
    return cluster_factory()
