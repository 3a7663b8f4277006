"""The IP-count benchmarks' rig: brokers, the preloaded input with its truth, the sink services, and a
watcher that times the last result committed in every sink and checks it against the truth.

Shared by ``bench/spark_job.py`` (onceflow alone) and ``bench/flink_anchor.py`` (onceflow next to
Flink). Everything runs on loopback, every service a child process.

- :func:`preload`: ``events`` AccessEvents (the log producer's traffic model, single-object Avro,
  record timestamp = event time) on a topic in Kafka transactions of 1,000, then the runtime's
  end-of-input markers (docs/architecture.md, "End of input"): the job closes its last windows itself,
  as it would at the end of a file. The truth is every (window, ip) count: the model's disorder is
  below the lateness, so every event counts.
- :func:`sink_services`: the coordinator (Kafka-logged) and one participant process hosting the
  ``kafka``, ``sqlite`` and ``postgres`` sinks (PostgreSQL: a throwaway server started here).
- :class:`ResultWatcher`: one run's outputs (a topic and/or tables of its own), polled until the sum
  of counts in each equals the number of events; then every row is compared with the truth. A run
  whose rows differ is void (:class:`VoidRunError`).
"""

from __future__ import annotations

import io
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import fastavro
import psycopg
from confluent_kafka import Consumer, Producer, TopicPartition
from cpu_meter import postmaster_pid

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.core.avro.single_object import HEADER_SIZE, MAGIC
from onceflow.core.kafka import RetryPolicy, end_offsets
from onceflow.core.service import read_ready_file
from onceflow.core.toml_writer import to_toml
from onceflow.ipcount.traffic.model import TrafficModel, event, ip_and_time
from onceflow.runtime.worker.end_of_input import write_end_of_input
from onceflow.testing.broker.apache_kafka import ApacheKafka
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.coordinator import CoordinatorProcess

WINDOW_MS = 5_000
LATENESS_MS = 5_000
#: (window_start, window_end, ip) -> count
Truth = dict[tuple[int, int, str], int]
Decoder = Callable[[bytes], dict[str, Any]]


class VoidRunError(RuntimeError):
    """A run whose results are not the truth: its numbers must not be reported."""


@contextmanager
def broker(kind: str, work: Path) -> Iterator[tuple[str, int | None]]:
    """``(bootstrap servers, pid)`` of a fresh ``embedded`` broker or ``apache-kafka`` (KRaft, full-speed JVM)."""
    if kind == "embedded":
        with EmbeddedBroker(work / "broker", 0, fsync="interval") as embedded:
            yield embedded.bootstrap_servers, embedded.pid
    elif kind == "apache-kafka":
        with ApacheKafka(work / "kafka", jvm_options=(), heap="1g") as kafka:
            yield kafka.bootstrap_servers, kafka.pid
    else:
        raise ValueError(f"unknown broker {kind!r}: embedded or apache-kafka")


@dataclass(frozen=True)
class Preloaded:
    topic: str
    events: int
    #: the events' end offsets, before the end-of-input markers (a bounded reader stops there)
    end_offsets: dict[int, int]
    truth: Truth


def preload(bootstrap: str, topic: str, events: int, event_rate: int, *, partitions: int = 2) -> Preloaded:
    """Write ``events`` AccessEvents and the end-of-input markers to a new ``topic``; return the truth."""
    # record timestamp = event time, which the model puts in the past: no time-based retention
    create_topic(bootstrap, topic, partitions=partitions, config={"retention.ms": "-1"})
    model = TrafficModel(seed=7, event_rate=event_rate)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"bench-{uuid.uuid4().hex[:8]}", "linger.ms": 20}
    )
    producer.init_transactions(60)
    for start in range(0, events, 1000):
        producer.begin_transaction()
        for i in range(start, min(events, start + 1000)):
            record = event(model, i)
            while True:
                try:
                    producer.produce(
                        topic,
                        value=ACCESS_EVENT_SERDE.encode(record),
                        key=record["ip"].encode(),
                        partition=i % partitions,
                        timestamp=record["event_time"],
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.commit_transaction(120)
    config = {"bootstrap.servers": bootstrap}
    offsets = end_offsets(config, topic, policy=RetryPolicy(timeout_s=60))
    write_end_of_input(config, topic, "bench-preload")
    truth: Counter[tuple[int, int, str]] = Counter()
    for ip, event_time in ip_and_time(model, 0, events):
        window = event_time - event_time % WINDOW_MS
        truth[(window, window + WINDOW_MS, ip)] += 1
    return Preloaded(topic, events, offsets, dict(truth))


@dataclass
class SinkServices:
    coordinator: str
    #: the job's ``[[participants]]``: one entry per sink, all on the one participant process
    participants: list[dict[str, str]]
    sqlite_path: Path | None
    postgres_dsn: str | None
    pids: dict[str, Callable[[], int | None]] = field(default_factory=dict)


@contextmanager
def sink_services(bootstrap: str, work: Path, sinks: list[str]) -> Iterator[SinkServices]:
    """The coordinator and one participant process hosting ``sinks`` (kafka, sqlite, postgres)."""
    with ExitStack() as stack:
        staging = work / "staging"
        coordinator = CoordinatorProcess(
            work / "coordinator", {"kafka": {"bootstrap_servers": bootstrap}, "staging_root": str(staging)}
        )
        stack.enter_context(coordinator)
        pids: dict[str, Callable[[], int | None]] = {"coordinator": lambda: coordinator.pid}
        hosted: list[dict[str, Any]] = []
        sqlite_path: Path | None = None
        dsn: str | None = None
        for sink in sinks:
            options: dict[str, Any]
            if sink == "kafka":
                options = {"state_dir": str(work / "kafka-sink"), "kafka": {"bootstrap_servers": bootstrap}}
            elif sink == "sqlite":
                sqlite_path = work / "results.db"
                options = {"path": str(sqlite_path)}
            elif sink == "postgres":
                from onceflow.testing.sinks.postgres import running_postgres

                server = stack.enter_context(running_postgres())
                dsn = server.dsn()
                options = {"dsn": dsn}
                pids["postgres"] = partial(postmaster_pid, server.data_dir)
            else:
                raise ValueError(f"unknown sink {sink!r}")
            hosted.append({"name": sink, "kind": sink, "options": options})
        settings = {
            "server": {"host": "127.0.0.1", "port": 0},
            "coordinator": {"target": coordinator.target},
            "staging": {"roots": [str(staging)]},
            "sinks": hosted,
        }
        config = work / "participant.toml"
        config.write_text(to_toml(settings))
        ready = work / "participant.ready.json"
        log = stack.enter_context((work / "participant.log").open("ab"))
        process = subprocess.Popen(
            [sys.executable, "-m", "onceflow.sinks", "--config", str(config), "--ready-file", str(ready)],
            stdout=log,
            stderr=log,
        )
        stack.callback(process.wait, 30)
        stack.callback(process.terminate)
        deadline = time.monotonic() + 180
        while (readiness := read_ready_file(ready, process.pid)) is None:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"participant did not start; see {work / 'participant.log'}")
            time.sleep(0.1)
        pids["participant"] = partial(int, process.pid)
        port = readiness.port
        yield SinkServices(
            coordinator.target,
            [{"sink": sink, "target": f"127.0.0.1:{port}"} for sink in sinks],
            sqlite_path,
            dsn,
            pids,
        )


_IP_COUNT_BODY = fastavro.parse_schema(
    {
        "type": "record",
        "name": "IpCount",
        "fields": [
            {"name": "window_start", "type": "long"},
            {"name": "window_end", "type": "long"},
            {"name": "ip", "type": "string"},
            {"name": "count", "type": "long"},
        ],
    }
)


def ip_count_body(value: bytes) -> dict[str, Any]:
    """An IpCount Avro body without a header (Flink's ``avro`` format)."""
    record: dict[str, Any] = fastavro.schemaless_reader(io.BytesIO(value), _IP_COUNT_BODY, None)  # type: ignore[assignment]
    return record


def single_object_ip_count(value: bytes) -> dict[str, Any]:
    """An IpCount-shaped single-object value as onceflow writes it: the schema a binding derives from the
    job's output (its fingerprint is the output's, not IpCount's), the same four fields."""
    if value[:2] != MAGIC:
        raise ValueError(f"not a single-object Avro value: {value[:10].hex()}")
    return ip_count_body(value[HEADER_SIZE:])


@dataclass
class RunOutputs:
    """Where one run writes: a topic (decoded by ``decode``) and/or tables, each its own."""

    topic: str | None = None
    decode: Decoder = single_object_ip_count
    sqlite: tuple[Path, str] | None = None
    postgres: tuple[str, str] | None = None


class ResultWatcher:
    """Times the moment every output of a run holds all ``events`` counts, then checks the rows."""

    def __init__(self, bootstrap: str, outputs: RunOutputs, events: int) -> None:
        self.outputs = outputs
        self.events = events
        self.done_at: dict[str, float] = {}
        self._kafka_rows: list[tuple[int, int, str, int]] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        if outputs.topic is not None:
            self._threads.append(threading.Thread(target=self._watch_topic, args=(bootstrap,), daemon=True))
        if outputs.sqlite is not None or outputs.postgres is not None:
            self._threads.append(threading.Thread(target=self._watch_tables, daemon=True))
        for thread in self._threads:
            thread.start()

    def _watch_topic(self, bootstrap: str) -> None:
        assert self.outputs.topic is not None
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-watch-{uuid.uuid4().hex[:8]}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 50,
            }
        )
        consumer.assign([TopicPartition(self.outputs.topic, 0, 0)])
        total = 0
        try:
            while not self._stop.is_set():
                for message in consumer.consume(10_000, timeout=0.05):
                    if message.error() is None and message.value():
                        row = self.outputs.decode(message.value() or b"")
                        self._kafka_rows.append((row["window_start"], row["window_end"], row["ip"], row["count"]))
                        total += row["count"]
                if total >= self.events and "kafka" not in self.done_at:
                    self.done_at["kafka"] = time.time()
        finally:
            consumer.close()

    @staticmethod
    def _table_sum(kind: str, location: Path | str, table: str, connections: dict[str, Any]) -> int:
        """The sum of the counts in ``table``, over a connection kept for the whole run.

        A connection a poll would cost PostgreSQL a backend start each time (10 a second), CPU the
        exactly-once runs with a PostgreSQL sink would pay and the others not; one connection each, in
        autocommit (every poll its own snapshot), costs a query a poll. A failed poll drops it."""
        try:
            if kind not in connections:
                connections[kind] = (
                    sqlite3.connect(f"file:{location}?mode=ro", uri=True, timeout=5, isolation_level=None)
                    if kind == "sqlite"
                    else psycopg.connect(str(location), autocommit=True)
                )
            found = connections[kind].execute(f'SELECT COALESCE(SUM("count"), 0) FROM "{table}"').fetchone()
        except (sqlite3.Error, psycopg.Error):  # no table yet, or the server restarts: a new connection next time
            stale = connections.pop(kind, None)
            if stale is not None:
                stale.close()
            return 0
        return int(found[0]) if found else 0

    def _watch_tables(self) -> None:
        tables = {kind: t for kind in ("sqlite", "postgres") if (t := getattr(self.outputs, kind)) is not None}
        connections: dict[str, Any] = {}
        try:
            while not self._stop.is_set() and len(self.done_at) < len(self._threads) + len(tables):
                for kind, (location, table) in tables.items():
                    if kind not in self.done_at and self._table_sum(kind, location, table, connections) >= self.events:
                        self.done_at[kind] = time.time()
                time.sleep(0.1)
        finally:
            for connection in connections.values():
                connection.close()

    @property
    def expected(self) -> int:
        return (
            (self.outputs.topic is not None) + (self.outputs.sqlite is not None) + (self.outputs.postgres is not None)
        )

    def wait(self, timeout: float, failed: Callable[[], BaseException | None] = lambda: None) -> float:
        """The wall time (``time.time()``) the last output became complete; raises on timeout or failure."""
        deadline = time.monotonic() + timeout
        while len(self.done_at) < self.expected:
            error = failed()
            if error is not None:
                raise VoidRunError(f"the job failed: {error}")
            if time.monotonic() > deadline:
                raise VoidRunError(f"not complete after {timeout:.0f}s: complete {sorted(self.done_at)}")
            time.sleep(0.05)
        return max(self.done_at.values())

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(10)

    def verify(self, truth: Truth) -> None:
        """Every output holds exactly the truth's rows (each (window, ip) once); raises :class:`VoidRunError`."""
        self.close()
        found: dict[str, list[tuple[int, int, str, int]]] = {}
        if self.outputs.topic is not None:
            found["kafka"] = list(self._kafka_rows)
        if self.outputs.sqlite is not None:
            path, table = self.outputs.sqlite
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
                found["sqlite"] = [
                    tuple(r) for r in db.execute(f'SELECT window_start, window_end, ip, "count" FROM "{table}"')
                ]
        if self.outputs.postgres is not None:
            dsn, table = self.outputs.postgres
            with psycopg.connect(dsn) as db:
                found["postgres"] = [
                    tuple(r) for r in db.execute(f'SELECT window_start, window_end, ip, "count" FROM "{table}"')
                ]
        for sink, rows in found.items():
            got = Counter((int(w), int(e), str(ip)) for w, e, ip, _ in rows)
            if any(n > 1 for n in got.values()):
                raise VoidRunError(f"{sink}: a (window, ip) appears more than once")
            values = {(int(w), int(e), str(ip)): int(c) for w, e, ip, c in rows}
            if values != truth:
                wrong = sum(1 for k in truth.keys() | values.keys() if truth.get(k) != values.get(k))
                raise VoidRunError(f"{sink}: {wrong} of {len(truth)} (window, ip) counts differ from the truth")
