"""The IP-count Spark job: throughput to the last result and result latency, exactly-once vs at-least-once.

Assumptions: one machine (2 cores here), everything on loopback: the embedded broker (or Apache Kafka,
``--broker apache-kafka``), the coordinator (Kafka-logged) and one participant process hosting the
job's sinks (Kafka, SQLite, PostgreSQL: a throwaway server started here), and the Spark driver in
this process (``--master``, ``local[2]``) with its executors' Python workers. They share the same
cores, so the numbers are the whole pipeline's on this machine, not Spark's alone.

1. **Throughput** (``bench/onceflow_runs.py``): ``--events`` AccessEvents preloaded with event times at
   ``--event-rate``/s, followed by the runtime's end-of-input markers. Each run reads them from the
   earliest offset with ``maxOffsetsPerTrigger = --batch`` and a 100 ms trigger into outputs of its
   own, and is timed from the first record read until the last window is committed in every sink;
   its rows are then compared with the truth, or the run is void. The steady-state rate (batches
   after the first) is a second column, labelled as such. The variants alternate, ``--repeats``
   times; medians, and the median of the per-repeat ratios. CPU µs per event of every process.
2. **Result latency**: a producer process writes ``--latency-rate`` events/s with event time =
   wall-clock time for ``--latency-seconds``; the job runs with ``--latency-trigger-ms`` (5 s =
   the default checkpoint interval) and the default lateness (5 s). For each complete 5 s window,
   latency = the wall time its first count is readable in ``ip_count_sink`` with read_committed,
   minus (window end + lateness): the earliest moment any watermark-based job may emit it. Each
   latency run also prints Spark's median phase timings (``durationMs``) of its batches with and
   without data, and the cores each process kept busy while the load ran (the load generator
   included: on one machine it competes for the same cores).
3. **Where a batch's time goes** (``--event-log``): Spark's event log of the whole session, taken
   apart per query over its batches with input (``bench/spark_events.py``): before the job, each
   stage, and after the job (the sink's commit: for exactly-once the 2PC, then the commit log).

Usage:
    .venv/bin/python bench/spark_job.py [--events 2000000] [--batch 500000] [--repeats 3]
        [--latency-seconds 60] [--latency-rate 20000] [--sinks kafka,sqlite,postgres]
        [--broker embedded|apache-kafka] [--variants exactly-once,exactly-once-kafka,exactly-once-tasks,at-least-once]
        (add at-least-once-control for an A/A control: the at-least-once run again, paired like the others)
        [--event-log]
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from cpu_meter import CpuMeter, format_cpu, own_threads_cpu, reaped_children_cpu
from ip_count_rig import LATENESS_MS, WINDOW_MS, broker, preload, sink_services
from onceflow_runs import VARIANTS, base_settings, in_turn, job_settings, run_variant, spark_jvm_pid, warm_up
from samples import percentile
from spark_events import batch_breakdown, event_log_conf

from onceflow.core.avro import IP_COUNT_SERDE
from onceflow.core.topics import SINK_TOPIC
from onceflow.ipcount.generator import EncodedTraffic
from onceflow.ipcount.traffic.model import TrafficModel
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.runner import build_session, start_query
from onceflow.testing.broker.clients import create_topic


def produce_wall_clock(bootstrap: str, topic: str, rate: int, seconds: float) -> None:
    """Child process: ``rate`` events/s with event time = now, committed every 100 ms.

    Encoded as the ``access-log-generator`` connector encodes its events (joined from pre-encoded
    fields), so the load costs the cores the job runs on as little as the product's own generator."""
    traffic = EncodedTraffic(TrafficModel(seed=1))
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"bench-live-{uuid.uuid4().hex[:8]}", "linger.ms": 5}
    )
    producer.init_transactions(30)
    started = time.monotonic()
    sent = 0
    while time.monotonic() - started < seconds:
        producer.begin_transaction()
        due = int((time.monotonic() - started + 0.1) * rate)
        for i, _, value in traffic.encoded(sent, due, event_time=int(time.time() * 1000)):
            producer.produce(topic, value=value, partition=i % 2)
        sent = max(sent, due)
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


def batch_phases(progress: list[Any]) -> dict[str, dict[str, float]]:
    """The median ms of each phase Spark times in a batch (``durationMs``), for batches with and without data."""
    kinds: dict[str, list[dict[str, int]]] = {"with data": [], "no data": []}
    for p in progress:
        kinds["with data" if p.numInputRows else "no data"].append(dict(p.durationMs))
    return {
        kind: {
            phase: statistics.median(d.get(phase, 0) for d in runs) for phase in sorted({k for d in runs for k in d})
        }
        for kind, runs in kinds.items()
        if runs
    } | {"batches": {kind: len(runs) for kind, runs in kinds.items()}}


def latency_run(
    spark: Any, settings: SparkJobSettings, watcher: WindowWatcher, rate: int, seconds: float, *, meter: CpuMeter
) -> tuple[list[float], dict[str, dict[str, float]], dict[str, float]]:
    topic = settings.source.topic
    create_topic(settings.kafka.bootstrap_servers, topic, partitions=2)
    query = start_query(spark, settings)
    try:
        while not query.recentProgress:  # the query is up before the clock starts
            time.sleep(0.2)
        begin_ms = int(time.time() * 1000)
        load = LoadMeter(meter)
        producer = multiprocessing.get_context("spawn").Process(
            target=produce_wall_clock, args=(settings.kafka.bootstrap_servers, topic, rate, seconds)
        )
        producer.start()
        producer.join()
        cores = load.stop()
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
        phases = batch_phases(query.recentProgress)
    finally:
        query.stop()
    return (
        [
            (watcher.first_seen[w] * 1000 - (w + WINDOW_MS + LATENESS_MS)) / 1000
            for w in windows
            if w in watcher.first_seen
        ],
        phases,
        cores,
    )


class LoadMeter:
    """Cores each component kept busy while the load generator ran: CPU seconds over wall seconds.

    The components of ``meter`` (the Spark JVM with its Python workers, the broker, the coordinator,
    the participant, PostgreSQL), this process (the Spark driver's Python side and the window
    watcher) and the load generator: a child of this process, counted when it has been reaped
    (``RUSAGE_CHILDREN``; the Spark JVM, the other child, runs on).
    """

    def __init__(self, meter: CpuMeter) -> None:
        self._meter = meter
        meter.start()
        self._own = own_threads_cpu()
        self._reaped = reaped_children_cpu()
        self._started = time.monotonic()

    def stop(self) -> dict[str, float]:
        wall = time.monotonic() - self._started
        cpu = self._meter.stop()
        cpu["bench process"] = own_threads_cpu() - self._own
        cpu["load generator"] = reaped_children_cpu() - self._reaped
        return {name: seconds / wall for name, seconds in cpu.items()}


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def report(results: dict[str, list[dict[str, Any]]], events: int) -> None:
    print(f"{'variant':<20}{'to last result':>16}{'from submission':>17}{'steady state':>14}"
          f"{'first batch s':>15}{'batches':>9}")  # fmt: skip
    for variant, runs in results.items():
        if not runs:
            continue
        print(
            f"{variant:<20}{statistics.median(r['to_last_result'] for r in runs):>16,.0f}"
            f"{statistics.median(r['from_submission'] for r in runs):>17,.0f}"
            f"{statistics.median(r['steady'] for r in runs):>14,.0f}"
            f"{statistics.median(r['first_batch_s'] for r in runs):>15.1f}"
            f"{statistics.median(r['batches'] for r in runs):>9.0f}"
        )
        cpu = {k: statistics.median(r["cpu"][k] for r in runs) for k in runs[0]["cpu"]}
        print(f"{'':<20}{format_cpu(cpu, events)}")
    baseline = results.get("at-least-once")
    if not baseline:
        return
    for variant, runs in results.items():
        if variant == "at-least-once" or not runs:
            continue
        # Each repeat ran the variants back to back: the ratio within a repeat shares the machine's state.
        paired = [r["to_last_result"] / b["to_last_result"] for r, b in zip(runs, baseline, strict=False)]
        print(
            f"{variant} / at-least-once, to the last result: median of paired ratios "
            f"{statistics.median(paired):.2f} ({', '.join(f'{x:.2f}' for x in paired)})"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--event-rate", type=int, default=100_000, help="events per second of event time")
    parser.add_argument("--batch", type=int, default=500_000, help="maxOffsetsPerTrigger of the throughput runs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--latency-seconds", type=float, default=60.0, help="0: no latency runs")
    parser.add_argument("--latency-rate", type=int, default=20_000)
    parser.add_argument("--latency-trigger-ms", type=int, default=5_000)
    parser.add_argument("--sinks", default="kafka,sqlite,postgres")
    parser.add_argument("--broker", default="embedded", choices=("embedded", "apache-kafka"))
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--event-log", action="store_true", help="keep Spark's event log and print where each batch's time went"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    sinks = [s.strip() for s in args.sinks.split(",") if s.strip()]
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    work = Path(tempfile.mkdtemp(prefix="onceflow-bench-spark-"))
    print(f"load average at the start: {load_average()}", flush=True)
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    latencies: dict[str, list[float]] = {}
    phases: dict[str, dict[str, dict[str, float]]] = {}
    loads: dict[str, dict[str, float]] = {}
    with ExitStack() as stack:
        bootstrap, broker_pid = stack.enter_context(broker(args.broker, work))
        create_topic(bootstrap, SINK_TOPIC, partitions=1)
        services = stack.enter_context(sink_services(bootstrap, work / "system", sinks))
        started = time.monotonic()
        data = preload(bootstrap, "bench_source", args.events, args.event_rate)
        print(f"preloaded {args.events} events in {time.monotonic() - started:.1f}s", flush=True)
        base = base_settings(bootstrap, work, services, args.master)
        if args.event_log:
            base["spark"]["conf"] = {**base["spark"]["conf"], **event_log_conf(work / "spark-events")}
        spark = build_session(job_settings(base, "exactly-once", work, "bench"), args.master)
        stack.callback(spark.stop)
        meter = CpuMeter()
        meter.add("spark", spark_jvm_pid(spark))
        meter.add("broker", broker_pid)
        for name, pid in services.pids.items():
            meter.add(name, pid)
        warm_up(spark, base, "tp-warmup", work=work, data=data, services=services, meter=CpuMeter(), batch=args.batch)
        for repeat in range(args.repeats):
            for variant in in_turn(variants, repeat):
                name = f"tp-{variant}-{repeat}"
                outcome = run_variant(
                    spark, base, variant, name, work=work, data=data, services=services, meter=meter, batch=args.batch
                )
                results[variant].append(outcome)
                print(f"{name}: load {load_average()} {outcome}", flush=True)
        if args.latency_seconds > 0:
            watcher = WindowWatcher(bootstrap)
            stack.callback(watcher.close)
            for guarantee in ("exactly-once", "at-least-once"):
                name = f"lat-{guarantee}"
                settings = job_settings(
                    base,
                    guarantee,
                    work,
                    name,
                    source={"topic": f"live_{guarantee}"},
                    trigger_interval_ms=args.latency_trigger_ms,
                )
                latencies[guarantee], phases[guarantee], loads[guarantee] = latency_run(
                    spark, settings, watcher, args.latency_rate, args.latency_seconds, meter=meter
                )
                print(f"{name}: {len(latencies[guarantee])} windows", flush=True)

    print(f"\nspark job: {args.events} events, batch {args.batch}, sinks {','.join(sinks)}, master {args.master}, "
          f"broker {args.broker}; load average at the end: {load_average()}")  # fmt: skip
    print("events/s, medians (to last result = first record read until the last window committed in every sink)")
    report(results, args.events)
    if latencies:
        print(
            f"\nresult latency after window end + lateness, {args.latency_rate} events/s at wall-clock time, "
            f"trigger {args.latency_trigger_ms} ms"
        )
    for guarantee, samples in latencies.items():
        if samples:
            print(
                f"{guarantee:<15} windows {len(samples):>3}  p50 {percentile(samples, 0.5):6.2f}s"
                f"  p99 {percentile(samples, 0.99):6.2f}s"
            )
            # Where a batch's time goes: Spark's own phase timings, median ms, over the last batches it keeps.
            for kind, timings in phases[guarantee].items():
                print(f"{'':<15} {kind}: " + ", ".join(f"{k} {v:g}" for k, v in timings.items()))
            busy = loads[guarantee]
            print(
                f"{'':<15} cores busy while the load ran: "
                + ", ".join(f"{name} {cores:.2f}" for name, cores in sorted(busy.items(), key=lambda kv: -kv[1]))
                + f"; total {sum(busy.values()):.2f} of {os.cpu_count()}"
            )
    if args.event_log:
        print("\nbatches with input, median ms per part (Spark's event log)")
        print("after the job = the sink's commit (exactly-once: the 2PC), then the commit log")
        for query, parts in batch_breakdown(work / "spark-events").items():
            print(f"{query:<24}" + ", ".join(f"{part} {ms:g}" for part, ms in parts.items()))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
