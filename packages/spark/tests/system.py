"""The real system around the Spark job, for the tests: broker, coordinator and participants as processes.

- :class:`SinkSystem` starts a coordinator (Kafka-logged) and one participant process that hosts the
  three sinks of the job (``kafka`` -> ip_count_sink, ``sqlite``, ``postgres``; with ``lakehouse``
  also ``delta`` and ``iceberg``, its catalog in the PostgreSQL database) and reads them back.
- :func:`produce_events` writes generated AccessEvents (``onceflow.logproducer``'s traffic model) in
  Kafka transactions, so the source topic has control records between the data
  (:mod:`onceflow.testing.spark.input`, shared with the benchmarks).
- :func:`truth` is the generator's ground truth per (window, ip); :func:`end_input` ends the input,
  which closes every window.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.service import read_ready_file
from onceflow.core.settings import KafkaSettings
from onceflow.core.toml_writer import to_toml
from onceflow.core.topics import SINK_COMMITS_TOPIC, SINK_TOPIC, SOURCE_TOPIC
from onceflow.ipcount.schema import ENTRYPOINT, ip_count_table_binding, ip_count_topic_binding, results_outputs
from onceflow.ipcount.traffic.model import TrafficModel
from onceflow.ipcount.traffic.truth import expected_counts
from onceflow.runtime.worker.end_of_input import write_end_of_input
from onceflow.sinks.readback import KafkaReader, PostgresReader, SqliteReader
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.coordinator import CoordinatorProcess
from onceflow.testing.spark.input import encoded_events, produce_events

from .conftest import TEST_SPARK, TEST_TRIGGER_MS

__all__ = [
    "LAKEHOUSE_SINKS",
    "SINKS",
    "Key",
    "SinkSystem",
    "create_database",
    "encoded_events",
    "end_input",
    "produce_events",
    "recent_model",
    "spark_job_config",
    "truth",
    "wait_until",
]

Key = tuple[int, str]
SINKS = ("kafka", "sqlite", "postgres")
LAKEHOUSE_SINKS = ("delta", "iceberg")


def recent_model(seed: int) -> TrafficModel:
    """The generator's traffic model starting an hour ago.

    Sink records carry the window start as their timestamp; the broker's time retention (7 days)
    would delete records of the model's default start date (2026-01-01) as soon as a segment rolls.
    """
    hour_ago = int(time.time() * 1000) - 3_600_000
    return TrafficModel(seed=seed, start_ms=hour_ago - hour_ago % 5_000)


def truth(model: TrafficModel, count: int) -> dict[Key, int]:
    """Expected count per (window_start, ip) of the model's first ``count`` events."""
    return {(row.window_start, row.ip): row.count for row in expected_counts(model, count)}


def end_input(bootstrap: str, topic: str = SOURCE_TOPIC) -> None:
    """End the test's input: an end-of-input marker in every partition closes every window."""
    write_end_of_input({"bootstrap.servers": bootstrap}, topic, "test")


def spark_job_config(path: Path, settings: Mapping[str, Any]) -> Path:
    """Write job settings (nested dicts; ``participants`` a list of dicts) as TOML."""
    path.write_text(to_toml(settings))
    return path


@dataclass
class SinkSystem:
    """Coordinator + a participant process with the kafka, sqlite and postgres sinks of the job."""

    broker: EmbeddedBroker
    work_dir: Path
    postgres_dsn: str
    #: The staging root (default: ``work_dir/staging``), e.g. ``s3://bucket/prefix`` with the store's
    #: AWS variables in ``env``, which every process gets.
    staging_uri: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    coordinator: CoordinatorProcess = field(init=False)
    participant: subprocess.Popen[bytes] | None = field(init=False, default=None)
    participant_port: int = field(init=False, default=0)
    #: Host the Delta Lake and Iceberg sinks too.
    lakehouse: bool = False

    def __post_init__(self) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.staging_root = self.work_dir / "staging"
        self.staging_uri = self.staging_uri or str(self.staging_root)
        self.sqlite_path = self.work_dir / "results.db"
        self.coordinator = CoordinatorProcess(
            self.work_dir / "coordinator",
            {
                "kafka": {"bootstrap_servers": self.broker.bootstrap_servers},
                "staging_root": self.staging_uri,
                "prepare_timeout_ms": 30_000,
                "commit_wait_ms": 30_000,
                "commit_retry": {"initial_backoff_ms": 50, "max_backoff_ms": 1000},
                "log": {"level": "INFO"},
            },
            env=self.env,
        )

    @property
    def sinks(self) -> tuple[str, ...]:
        return (*SINKS, *LAKEHOUSE_SINKS) if self.lakehouse else SINKS

    @property
    def participants(self) -> list[dict[str, str]]:
        return [{"sink": sink, "target": f"127.0.0.1:{self.participant_port}"} for sink in self.sinks]

    @property
    def outputs(self) -> dict[str, list[dict[str, Any]]]:
        """The IP-count results bound to every sink: ``ip_count_sink`` in Kafka, ``ip_counts`` elsewhere."""
        return results_outputs([s for s in self.sinks if s != "kafka"], ["kafka"])

    def lakehouse_sinks(self) -> list[dict[str, Any]]:
        """The ``[[sinks]]`` entries of the Delta and Iceberg sinks (none unless ``lakehouse``)."""
        if not self.lakehouse:
            return []
        return [
            {
                "name": "delta",
                "kind": "delta",
                "options": {"root": str(self.work_dir / "lake"), "state_dir": str(self.work_dir / "delta-sink")},
            },
            {
                "name": "iceberg",
                "kind": "iceberg",
                "options": {
                    "warehouse": str(self.work_dir / "warehouse"),
                    "state_dir": str(self.work_dir / "iceberg-sink"),
                    "catalog": {"postgres_dsn": self.postgres_dsn},
                },
            },
        ]

    def start(self) -> SinkSystem:
        create_topic(self.broker.bootstrap_servers, SOURCE_TOPIC, partitions=2)
        create_topic(self.broker.bootstrap_servers, SINK_TOPIC, partitions=1)
        self.coordinator.start()
        self._start_participant()
        return self

    def _start_participant(self) -> None:
        bootstrap = self.broker.bootstrap_servers
        config = self.work_dir / "participant.toml"
        config.write_text(
            to_toml(
                {
                    "server": {"host": "127.0.0.1", "port": self.participant_port},
                    "staging": {
                        "roots": [self.staging_uri],
                        "allowed_schemes": ["s3" if self.staging_uri.startswith("s3://") else "file"],
                    },
                    "coordinator": {
                        "target": self.coordinator.target,
                        "initial_backoff_s": 0.1,
                        "max_backoff_s": 0.5,
                    },
                    "sinks": [
                        {
                            "name": "kafka",
                            "kind": "kafka",
                            "options": {
                                "state_dir": str(self.work_dir / "kafka-sink"),
                                "kafka": {"bootstrap_servers": bootstrap},
                            },
                        },
                        {"name": "sqlite", "kind": "sqlite", "options": {"path": str(self.sqlite_path)}},
                        {"name": "postgres", "kind": "postgres", "options": {"dsn": self.postgres_dsn}},
                        *self.lakehouse_sinks(),
                    ],
                }
            )
        )
        ready = self.work_dir / "participant.ready.json"
        ready.unlink(missing_ok=True)
        with (self.work_dir / "participant.log").open("ab") as log:
            self.participant = subprocess.Popen(
                [sys.executable, "-m", "onceflow.sinks", "--config", str(config), "--ready-file", str(ready)],
                stdout=log,
                stderr=log,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
            )
        deadline = time.monotonic() + 90
        while (readiness := read_ready_file(ready, self.participant.pid)) is None:
            if self.participant.poll() is not None:
                raise AssertionError(f"participant exited:\n{self.log_tail('participant.log')}")
            if time.monotonic() > deadline:
                raise AssertionError(f"participant not ready:\n{self.log_tail('participant.log')}")
            time.sleep(0.05)
        self.participant_port = readiness.port

    def restart_participant(self) -> None:
        """``kill -9`` the participant server and start it again on the same port."""
        assert self.participant is not None
        self.participant.kill()
        self.participant.wait()
        self._start_participant()

    def stop(self) -> None:
        if self.participant is not None:
            self.participant.send_signal(signal.SIGTERM)
            try:
                self.participant.wait(15)
            except subprocess.TimeoutExpired:
                self.participant.kill()
                self.participant.wait()
            self.participant = None
        self.coordinator.stop()

    def job_config(self, tmp_path: Path, job: str, own: Mapping[str, Any]) -> Path:
        """A test job's config against this system (fast trigger, restarts, every sink), ``own`` on top."""
        settings = {
            "job": job,
            "entrypoint": ENTRYPOINT,
            "outputs": self.outputs,
            "checkpoint_location": str(tmp_path / job / "checkpoint"),
            "staging_root": str(self.staging_root),
            "trigger_interval_ms": TEST_TRIGGER_MS,
            "kafka": {"bootstrap_servers": self.broker.bootstrap_servers},
            "source": {"max_offsets_per_trigger": 2_000},
            "coordinator": {"target": self.coordinator.target, "register_timeout_ms": 120_000},
            "spark": {**TEST_SPARK, "app_name": f"onceflow-{job}"},
            "restart": {"attempts": 1000, "delay_ms": 1000},
            "participants": self.participants,
            "metrics": {"port": 0},
            **own,
        }
        return spark_job_config(tmp_path / f"{job}.toml", settings)

    def replay_audit(
        self, configs: list[Path], env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``onceflow job audit`` of the jobs ``configs`` against this system's participant config
        (``env``: the whole environment of the command, else this process's)."""
        command = [
            str(Path(sys.executable).parent / "onceflow"), "job", "audit", *map(str, configs),
            "--participant-config", str(self.work_dir / "participant.toml"), "--master", "local[2]",
        ]  # fmt: skip
        return subprocess.run(
            command, capture_output=True, text=True, timeout=600, check=False, env=None if env is None else dict(env)
        )

    def log_tail(self, name: str, chars: int = 4000) -> str:
        path = self.work_dir / name
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    # --- reading the sinks back -------------------------------------------------------------

    def sqlite_results(self) -> dict[Key, int]:
        try:
            rows = SqliteReader("sqlite", self.sqlite_path).rows(ip_count_table_binding("sqlite"))
        except (FileNotFoundError, sqlite3.OperationalError):  # not created yet
            return {}
        return {(int(r["window_start"]), str(r["ip"])): int(r["count"]) for r in rows}

    def postgres_results(self) -> dict[Key, int]:
        try:
            rows = PostgresReader("postgres", self.postgres_dsn).rows(ip_count_table_binding("postgres"))
        except psycopg.errors.UndefinedTable:  # not created yet: a job creates its tables when it registers
            return {}
        return {(int(r["window_start"]), str(r["ip"])): int(r["count"]) for r in rows}

    def kafka_results(self, *, latest_wins: bool = False) -> dict[Key, int]:
        """ip_count_sink read with read_committed. In append mode every key must appear once."""
        kafka = KafkaSettings(bootstrap_servers=self.broker.bootstrap_servers)
        rows = KafkaReader("kafka", kafka, SINK_TOPIC, SINK_COMMITS_TOPIC).rows(ip_count_topic_binding("kafka"))
        seen: Counter[Key] = Counter()
        results: dict[Key, int] = {}
        for row in rows:
            key = (int(row["window_start"]), str(row["ip"]))
            seen[key] += 1
            results[key] = int(row["count"])
        if not latest_wins:
            duplicates = {k: n for k, n in seen.items() if n > 1}
            assert not duplicates, f"ip_count_sink has duplicate results: {list(duplicates.items())[:5]}"
        return results

    def wait_for_results(self, expected: Mapping[Key, int], timeout: float = 180.0) -> None:
        """Wait until SQLite holds every expected key (the sinks commit together), or fail."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.sqlite_results()) >= len(expected):
                return
            time.sleep(0.5)
        got = self.sqlite_results()
        raise AssertionError(f"only {len(got)} of {len(expected)} results after {timeout}s")

    def assert_exact(self, expected: Mapping[Key, int], *, latest_wins: bool = False) -> None:
        """Every sink equals ``expected`` exactly."""
        sqlite = self.sqlite_results()
        postgres = self.postgres_results()
        kafka = self.kafka_results(latest_wins=latest_wins)
        for name, got in (("sqlite", sqlite), ("postgres", postgres), ("kafka", kafka)):
            missing = {k: v for k, v in expected.items() if got.get(k) != v}
            extra = {k: v for k, v in got.items() if k not in expected}
            assert not missing and not extra, (
                f"{name}: {len(missing)} wrong or missing (e.g. {list(missing.items())[:3]} got "
                f"{[got.get(k) for k in list(missing)[:3]]}), {len(extra)} unexpected (e.g. {list(extra.items())[:3]})"
            )

    def wait_exact(self, expected: Mapping[Key, int], *, latest_wins: bool = False, timeout: float = 60.0) -> None:
        """:meth:`assert_exact`, retried until ``timeout``: the participants commit a batch in parallel."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.assert_exact(expected, latest_wins=latest_wins)
                return
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)


def wait_until(check: Callable[[], None], timeout: float) -> None:
    """Call ``check`` until it stops raising AssertionError; after ``timeout`` its error is raised."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            check()
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def create_database(admin_dsn: str, name: str) -> str:
    """A fresh database on the test server; its DSN."""
    from psycopg import sql

    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return admin_dsn.replace("dbname=postgres", f"dbname={name}")
