"""Fixtures of the Spark tests: one local[2] SparkSession per test session, job settings, and the sink system."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyspark.sql import SparkSession

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.ipcount.schema import ENTRYPOINT, results_outputs
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.runner.session import build_session
from onceflow.testing.sinks.postgres import PostgresServer

if TYPE_CHECKING:
    from .system import SinkSystem

#: Trigger interval of the tests' queries (the default is 5 s).
TEST_TRIGGER_MS = 1000
#: Spark settings of the tests (the driver's JVM options are the suite's, set by the onceflow_spark
#: plugin: onceflow.testing.spark.defaults).
TEST_SPARK: dict[str, Any] = {"master": "local[2]"}


def ip_count_outputs(participants: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The IP-count results bound to every participant's sink: its topic in ``kafka``, its table elsewhere."""
    sinks = [str(p["sink"]) for p in participants]
    return results_outputs([s for s in sinks if s != "kafka"], [s for s in sinks if s == "kafka"])


def job_settings(bootstrap: str, work: Path, system: Any = None, **overrides: Any) -> SparkJobSettings:
    """Settings of the IP-count job in a test: fast trigger, checkpoint under ``work``, the system's sinks
    if given; an exactly-once job without ``outputs`` gets the results bound to every participant."""
    doc: dict[str, Any] = {
        "entrypoint": ENTRYPOINT,
        "kafka": {"bootstrap_servers": bootstrap},
        "checkpoint_location": str(work / "checkpoint"),
        "staging_root": str(work / "staging"),
        "trigger_interval_ms": TEST_TRIGGER_MS,
        "spark": TEST_SPARK,
        "guarantee": "at-least-once",
    }
    if system is not None:
        doc.update(
            guarantee="exactly-once",
            staging_root=str(system.staging_root),
            coordinator={"target": system.coordinator.target},
            participants=system.participants,
        )
    doc.update(overrides)
    if doc["guarantee"] == "exactly-once" and "outputs" not in doc:
        doc["outputs"] = ip_count_outputs(doc.get("participants", []))
    return SparkJobSettings.model_validate(doc)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """A local[2] session shared by every in-process Spark test (a JVM start costs ~10 s)."""
    settings = job_settings("127.0.0.1:9", tmp_path_factory.mktemp("spark"))
    session = build_session(settings, "local[2]")
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


@pytest.fixture
def system(broker: EmbeddedBroker, tmp_path: Path, postgres_server: PostgresServer) -> Iterator[SinkSystem]:
    """The sinks of a job on ``broker``: a coordinator, and a participant with Kafka, SQLite and PostgreSQL."""
    from .system import SinkSystem, create_database  # system.py takes this module's test settings

    dsn = create_database(postgres_server.dsn(), f"spark_{uuid.uuid4().hex[:12]}")
    started = SinkSystem(broker, tmp_path / "system", dsn).start()
    yield started
    started.stop()
