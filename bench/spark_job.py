"""The IP-count Spark job: sustained throughput and result latency, exactly-once vs the at-least-once baseline.

Assumptions: one machine (2 cores here), everything on loopback: the embedded broker, the
coordinator (Kafka-logged) and one participant process hosting the job's sinks (``--sinks``; the
Kafka sink writes ``ip_count_sink``, SQLite a file, PostgreSQL a throwaway server started here),
and the Spark driver in this process (``--master``, ``local[2]``) with its executors' Python
workers. The broker, the participant and Spark share the same cores, so the numbers are the
whole pipeline's on this machine, not Spark's alone.

Input: the log producer's traffic model (``onceflow.logproducer``), Avro single-object AccessEvents
on ``ip_count_source`` (2 partitions) written in Kafka transactions of 1,000 events.

1. **Throughput.** ``--events`` events are preloaded with event times at ``--event-rate``/s (a
   real-time-like stream: few windows per batch, ~1,000 ips per window). The job then reads them
   from the earliest offset with ``maxOffsetsPerTrigger = --batch`` (500,000: one 5 s checkpoint
   interval of a 100,000 events/s stream) and a 100 ms trigger, so micro-batches run back to back.
   Sustained events/s = input rows / trigger time over every batch after the first (the first
   pays the JVM and Python-worker warm-up). The exactly-once job (2PC through the coordinator to
   every sink), exactly-once into ``ip_count_sink`` only (the baseline's single output: the cost of
   the guarantee itself) and the at-least-once baseline (foreachBatch with a plain producer to
   ``ip_count_sink``, no 2PC) read the same input, back to back, each ``--repeats`` times with a
   fresh checkpoint; medians and the median of the per-repeat ratios are reported.
2. **Result latency.** A producer process writes ``--latency-rate`` events/s with event time =
   wall-clock time for ``--latency-seconds``; the job runs with the default trigger (5 s =
   checkpoint interval) and lateness (5 s). For each complete 5 s window, latency = the wall time
   its first count is readable in ``ip_count_sink`` with read_committed, minus (window end +
   lateness): the earliest moment any watermark-based job may emit it. p50/p99 over windows.

Usage:
    .venv/bin/python bench/spark_job.py [--events 2000000] [--batch 500000] [--repeats 3]
        [--latency-seconds 60] [--latency-rate 20000] [--sinks kafka,sqlite,postgres]
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.avro import ACCESS_EVENT_SERDE, IP_COUNT_SERDE
from onceflow.core.toml_writer import to_toml
from onceflow.core.topics import SINK_TOPIC
from onceflow.core.traffic.model import TrafficModel, event
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.runner import build_session, start_query
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.coordinator import CoordinatorProcess

LATENESS_MS = 5_000
WINDOW_MS = 5_000


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def produce_preloaded(bootstrap: str, topic: str, model: TrafficModel, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    for start in range(0, count, 1000):
        producer.begin_transaction()
        for i in range(start, min(count, start + 1000)):
            while True:
                try:
                    producer.produce(topic, value=ACCESS_EVENT_SERDE.encode(event(model, i)), partition=i % 2)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.commit_transaction(60)


def produce_wall_clock(bootstrap: str, topic: str, rate: int, seconds: float) -> None:
    """Child process: ``rate`` events/s with event time = now, committed every 100 ms."""
    model = TrafficModel(seed=1)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"bench-live-{uuid.uuid4().hex[:8]}", "linger.ms": 5}
    )
    producer.init_transactions(30)
    started = time.monotonic()
    sent = 0
    while time.monotonic() - started < seconds:
        producer.begin_transaction()
        due = int((time.monotonic() - started + 0.1) * rate)
        now_ms = int(time.time() * 1000)
        while sent < due:
            record = event(model, sent)
            record["event_time"] = now_ms
            producer.produce(topic, value=ACCESS_EVENT_SERDE.encode(record), partition=sent % 2)
            sent += 1
        producer.commit_transaction(60)
        time.sleep(max(0.0, started + sent / rate - time.monotonic()))


class WindowWatcher:
    """Reads ``ip_count_sink`` with read_committed; remembers when each window was first readable."""

    def __init__(self, bootstrap: str) -> None:
        self.first_seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-watch-{uuid.uuid4().hex[:8]}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 20,
            }
        )
        self._consumer.assign([TopicPartition(SINK_TOPIC, 0, 0)])
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for message in self._consumer.consume(10_000, timeout=0.05):
                if message.error() is None and message.value():
                    row = IP_COUNT_SERDE.decode(message.value() or b"")
                    self.first_seen.setdefault(row["window_start"], time.time())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._consumer.close()


@contextmanager
def sink_system(broker: EmbeddedBroker, work: Path, sinks: list[str]) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """Coordinator + one participant process with ``sinks``; yields (coordinator target, participants)."""
    with ExitStack() as stack:
        staging = work / "staging"
        coordinator = CoordinatorProcess(
            work / "coordinator",
            {"kafka": {"bootstrap_servers": broker.bootstrap_servers}, "staging_root": str(staging)},
        )
        stack.enter_context(coordinator)
        hosted: list[dict[str, Any]] = []
        for sink in sinks:
            options: dict[str, Any]
            if sink == "kafka":
                options = {
                    "state_dir": str(work / "kafka-sink"),
                    "kafka": {"bootstrap_servers": broker.bootstrap_servers},
                }
            elif sink == "sqlite":
                options = {"path": str(work / "results.db")}
            else:
                from onceflow.testing.sinks.postgres import running_postgres

                server = stack.enter_context(running_postgres())
                options = {"dsn": server.dsn()}
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
        log = (work / "participant.log").open("ab")
        process = subprocess.Popen(
            [sys.executable, "-m", "onceflow.sinks", "--config", str(config), "--ready-file", str(ready)],
            stdout=log,
            stderr=log,
        )
        stack.callback(process.wait, 30)
        stack.callback(process.terminate)
        deadline = time.monotonic() + 120
        while not ready.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"participant did not start; see {work / 'participant.log'}")
            time.sleep(0.1)
        port = json.loads(ready.read_text())["port"]
        yield coordinator.target, [{"sink": sink, "target": f"127.0.0.1:{port}"} for sink in sinks]


def job_settings(base: dict[str, Any], guarantee: str, work: Path, name: str, **overrides: Any) -> SparkJobSettings:
    return SparkJobSettings.model_validate(
        {
            **base,
            "job": name,
            "guarantee": guarantee,
            "checkpoint_location": str(work / "checkpoints" / name),
            "spark": {**base["spark"], "query_name": name},
            **overrides,
        }
    )


def throughput_run(spark: Any, settings: SparkJobSettings, events: int) -> dict[str, float]:
    query = start_query(spark, settings)
    seen: list[dict[str, Any]] = []
    try:
        deadline = time.monotonic() + 900
        while sum(p["numInputRows"] for p in seen) < events:
            if time.monotonic() > deadline or query.exception() is not None:
                raise RuntimeError(f"run {settings.job} did not finish: {query.exception()}")
            time.sleep(0.2)
            seen = [dict(p) for p in query.recentProgress]
    finally:
        query.stop()
    steady = [p for p in seen[1:] if p["numInputRows"] > 0]
    rows = sum(p["numInputRows"] for p in steady)
    seconds = sum(p["durationMs"]["triggerExecution"] for p in steady) / 1000
    return {
        "events_per_s": rows / seconds,
        "batch_s": statistics.median(p["durationMs"]["triggerExecution"] / 1000 for p in steady),
        "first_batch_s": seen[0]["durationMs"]["triggerExecution"] / 1000,
        "batches": len(steady),
    }


def latency_run(
    spark: Any, settings: SparkJobSettings, watcher: WindowWatcher, rate: int, seconds: float
) -> list[float]:
    topic = settings.source.topic
    create_topic(settings.kafka.bootstrap_servers, topic, partitions=2)
    query = start_query(spark, settings)
    try:
        while not query.recentProgress:  # the query is up before the clock starts
            time.sleep(0.2)
        begin_ms = int(time.time() * 1000)
        producer = multiprocessing.get_context("spawn").Process(
            target=produce_wall_clock, args=(settings.kafka.bootstrap_servers, topic, rate, seconds)
        )
        producer.start()
        producer.join()
        end_ms = int(time.time() * 1000)
        windows = [w for w in range(begin_ms - begin_ms % WINDOW_MS + WINDOW_MS, end_ms - WINDOW_MS, WINDOW_MS)]
        # keep the stream's event time moving so the last windows close: a trickle of events
        tail = multiprocessing.get_context("spawn").Process(
            target=produce_wall_clock, args=(settings.kafka.bootstrap_servers, topic, 50, 30)
        )
        tail.start()
        deadline = time.monotonic() + 60
        while any(w not in watcher.first_seen for w in windows) and time.monotonic() < deadline:
            time.sleep(0.2)
        tail.terminate()
        tail.join()
    finally:
        query.stop()
    return [
        (watcher.first_seen[w] * 1000 - (w + WINDOW_MS + LATENESS_MS)) / 1000
        for w in windows
        if w in watcher.first_seen
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--event-rate", type=int, default=100_000, help="events per second of event time")
    parser.add_argument("--batch", type=int, default=500_000, help="maxOffsetsPerTrigger of the throughput runs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency-seconds", type=float, default=60.0)
    parser.add_argument("--latency-rate", type=int, default=20_000)
    parser.add_argument("--sinks", default="kafka,sqlite,postgres")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    sinks = [s.strip() for s in args.sinks.split(",") if s.strip()]
    work = Path(tempfile.mkdtemp(prefix="onceflow-bench-spark-"))
    with ExitStack() as stack:
        broker = stack.enter_context(EmbeddedBroker(work / "broker", 0))
        create_topic(broker.bootstrap_servers, "bench_source", partitions=2)
        create_topic(broker.bootstrap_servers, SINK_TOPIC, partitions=1)
        target, participants = stack.enter_context(sink_system(broker, work / "system", sinks))
        started = time.monotonic()
        produce_preloaded(
            broker.bootstrap_servers, "bench_source", TrafficModel(seed=7, event_rate=args.event_rate), args.events
        )
        print(f"preloaded {args.events} events in {time.monotonic() - started:.1f}s", flush=True)
        base: dict[str, Any] = {
            "kafka": {"bootstrap_servers": broker.bootstrap_servers},
            "staging_root": str(work / "system" / "staging"),
            "coordinator": {"target": target},
            "participants": participants,
            "spark": {"master": args.master, "shuffle_partitions": 2},
            "log": {"level": "WARNING"},
        }
        spark = build_session(job_settings(base, "exactly-once", work, "bench"), args.master)
        stack.callback(spark.stop)
        # (variant, guarantee, participants): exactly-once into the same single output as the
        # baseline (ip_count_sink) is the cost of the guarantee; into every sink, the whole job's.
        kafka_only = [p for p in participants if p["sink"] == "kafka"]
        variants = [("exactly-once", "exactly-once", participants), ("at-least-once", "at-least-once", participants)]
        if kafka_only and len(participants) > 1:
            variants.insert(1, ("exactly-once-kafka", "exactly-once", kafka_only))
        results: dict[str, list[dict[str, float]]] = {v: [] for v, _, _ in variants}
        for repeat in range(args.repeats):
            for variant, guarantee, sinks_of_run in variants:
                name = f"tp-{variant}-{repeat}"
                settings = job_settings(
                    base,
                    guarantee,
                    work,
                    name,
                    participants=sinks_of_run,
                    trigger_interval_ms=100,
                    source={"topic": "bench_source", "max_offsets_per_trigger": args.batch},
                )
                outcome = throughput_run(spark, settings, args.events)
                results[variant].append(outcome)
                print(f"{name}: {outcome}", flush=True)
        guarantees = ("exactly-once", "at-least-once")
        watcher = WindowWatcher(broker.bootstrap_servers)
        stack.callback(watcher.close)
        latencies: dict[str, list[float]] = {}
        for guarantee in guarantees:
            name = f"lat-{guarantee}"
            settings = job_settings(base, guarantee, work, name, source={"topic": f"live_{guarantee}"})
            latencies[guarantee] = latency_run(spark, settings, watcher, args.latency_rate, args.latency_seconds)
            print(f"{name}: {len(latencies[guarantee])} windows", flush=True)

    print(f"\nspark job: {args.events} events, batch {args.batch}, sinks {','.join(sinks)}, master {args.master}")
    print(f"{'variant':<20}{'events/s (median)':>20}{'batch s':>10}{'first batch s':>15}{'batches':>9}")
    medians: dict[str, float] = {}
    for variant, runs in results.items():
        medians[variant] = statistics.median(r["events_per_s"] for r in runs)
        print(
            f"{variant:<20}{medians[variant]:>20,.0f}"
            f"{statistics.median(r['batch_s'] for r in runs):>10.2f}"
            f"{statistics.median(r['first_batch_s'] for r in runs):>15.1f}"
            f"{statistics.median(r['batches'] for r in runs):>9.0f}"
        )
    baseline = results["at-least-once"]
    for variant, runs in results.items():
        if variant == "at-least-once":
            continue
        # Each repeat ran the variants back to back: the ratio within a repeat shares the machine's state.
        paired = [r["events_per_s"] / b["events_per_s"] for r, b in zip(runs, baseline, strict=True)]
        print(
            f"{variant} / at-least-once: ratio of medians {medians[variant] / medians['at-least-once']:.2f}, "
            f"median of paired ratios {statistics.median(paired):.2f} ({', '.join(f'{x:.2f}' for x in paired)})"
        )
    print(f"\nresult latency after window end + lateness, {args.latency_rate} events/s at wall-clock time, trigger 5 s")
    for guarantee, samples in latencies.items():
        if samples:
            print(
                f"{guarantee:<15} windows {len(samples):>3}  p50 {percentile(samples, 0.5):6.2f}s"
                f"  p99 {percentile(samples, 0.99):6.2f}s"
            )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
