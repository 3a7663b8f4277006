"""The embedded broker next to Apache Kafka: start time, produce and fetch throughput, EndTxn latency.

Assumptions:
- Apache Kafka is the version ``make setup`` fetched (``.cache/kafka/<version>/libs``), single-node
  KRaft, started by :class:`~onceflow.testing.broker.apache_kafka.ApacheKafka` with the test
  fixture's broker settings and heap (512 MB) but the JVM's default GC and JIT; the embedded broker
  runs with ``--fsync interval``. Neither fsyncs per write (Kafka leaves flushing to the OS by
  default), so both acknowledge from the page cache;
- both run as child processes on loopback of one machine (2 cores here), with the confluent-kafka
  client in this process sharing the CPU, so the numbers are end-to-end, client included;
- each run measures every variant on both brokers back to back, on fresh topics of 3 partitions:
  idempotent produce of 100-byte values (linger.ms=5, after a warm-up record), transactional produce
  committing every 100 ms, ``commit_transaction()`` latency of 3-record transactions over the 3
  partitions, and a read_committed fetch of the transactional topic;
- ``kafka-producer-perf-test`` (Kafka's ProducerPerformance, the Java client: acks=all, idempotent)
  writes the same number of 100-byte records, plain and with ``--transactional-id`` committing
  every 100 ms; its own "records/sec" is reported;
- start time is ``start()`` until the broker answers (Kafka: JVM start, storage format on the first
  start, KRaft election and broker registration), on a fresh data dir, measured once per run.

Prints per-run numbers and the medians.

    .venv/bin/python bench/kafka_vs_embedded.py [--messages 200000] [--runs 3] [--txns 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from kafka_load import commit_latencies, drain, produce_idempotent, produce_transactional
from samples import percentile

from onceflow.broker.embedded import BrokerProcess, EmbeddedBroker
from onceflow.testing.broker.apache_kafka import ApacheKafka, kafka_version
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.broker.kafka_tools import PRODUCER_PERFORMANCE, run_tool

PARTITIONS = 3
VALUE = b"x" * 100
BROKERS: dict[str, Callable[[Path], BrokerProcess]] = {
    "embedded": lambda path: EmbeddedBroker(path, fsync="interval"),
    # Full JIT (C2) and G1 like a deployment, not the tests' fast-start options.
    "apache-kafka": lambda path: ApacheKafka(path, jvm_options=()),
}


def producer_perf_test(bootstrap: str, topic: str, messages: int, *, transactional: bool) -> float:
    """Records/s that Kafka's own ``kafka-producer-perf-test`` reports (the Java client)."""
    args = ["--topic", topic, "--num-records", str(messages), "--record-size", str(len(VALUE)),
            "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all",
            "enable.idempotence=true", "linger.ms=5"]  # fmt: skip
    if transactional:
        args += ["--transactional-id", f"bench-{uuid.uuid4().hex[:8]}", "--transaction-duration-ms", "100"]
    result = run_tool(PRODUCER_PERFORMANCE, *args, timeout=600)
    summary = [line for line in result.stdout.splitlines() if "records sent" in line]
    if result.returncode != 0 or not summary:
        raise RuntimeError(f"kafka-producer-perf-test failed ({result.returncode}): {result.stderr[-2000:]}")
    return float(summary[-1].split(" records sent, ")[1].split(" records/sec")[0])


def measure(kind: str, data_dir: Path, messages: int, txns: int) -> dict[str, float]:
    """One run of every variant on a fresh broker of ``kind``."""
    broker = BROKERS[kind](data_dir)
    start = time.perf_counter()
    with broker:
        started_s = time.perf_counter() - start
        bootstrap = broker.bootstrap_servers
        for topic in ("idempotent", "txn", "latency", "perf", "perf-txn"):
            create_topic(bootstrap, topic, partitions=PARTITIONS)
        produced = produce_idempotent(bootstrap, "idempotent", messages, VALUE)
        transactional = produce_transactional(bootstrap, "txn", messages, VALUE, lambda _n, age: age >= 0.1)
        latencies = commit_latencies(bootstrap, "latency", txns, PARTITIONS, VALUE)
        fetched = drain(bootstrap, "txn", PARTITIONS, messages, "read_committed")
        perf = producer_perf_test(bootstrap, "perf", messages, transactional=False)
        perf_txn = producer_perf_test(bootstrap, "perf-txn", messages, transactional=True)
    return {
        "start s": started_s,
        "idempotent msgs/s": produced,
        "txn/100ms msgs/s": transactional,
        "commit p50 ms": percentile(latencies, 0.5) * 1000,
        "commit p99 ms": percentile(latencies, 0.99) * 1000,
        "read_committed msgs/s": fetched,
        "perf-test msgs/s": perf,
        "perf-test txn msgs/s": perf_txn,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000, help="records per produce/fetch variant")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--txns", type=int, default=200, help="transactions timed per run for commit latency")
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {kind: [] for kind in BROKERS}
    for run in range(args.runs):
        for kind in BROKERS:
            with tempfile.TemporaryDirectory() as tmp:
                results[kind].append(measure(kind, Path(tmp), args.messages, args.txns))
            line = ", ".join(f"{name} {value:,.2f}" for name, value in results[kind][-1].items())
            print(f"run {run + 1}/{args.runs} {kind}: {line}", flush=True)
    print(f"\nmedians over {args.runs} runs (Apache Kafka {kafka_version()}):")
    print(f"{'measure':<24}{'embedded':>16}{'apache-kafka':>16}{'embedded/kafka':>16}")
    for name in results["embedded"][0]:
        medians = [statistics.median(r[name] for r in results[kind]) for kind in BROKERS]
        ratio = medians[0] / medians[1] if medians[1] else float("nan")
        print(f"{name:<24}" + "".join(f"{value:>16,.2f}" for value in medians) + f"{ratio:>16.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
