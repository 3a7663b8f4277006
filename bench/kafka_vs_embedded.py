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

from confluent_kafka import Consumer, Producer, TopicPartition

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


def _producer(bootstrap: str, transactional_id: str | None = None) -> Producer:
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "linger.ms": 5,
        "queue.buffering.max.messages": 500_000,
    }
    if transactional_id is not None:
        config["transactional.id"] = transactional_id
    producer = Producer(config)
    if transactional_id is not None:
        producer.init_transactions(30)
    return producer


def _send(producer: Producer, topic: str, partition: int | None = None) -> None:
    while True:
        try:
            if partition is None:
                producer.produce(topic, VALUE)
            else:
                producer.produce(topic, VALUE, partition=partition)
            return
        except BufferError:
            producer.poll(0.01)


def produce_idempotent(bootstrap: str, topic: str, messages: int) -> float:
    producer = _producer(bootstrap)
    _send(producer, topic)  # warm-up: connect and get a producer id outside the timing
    if producer.flush(60):
        raise RuntimeError("warm-up message not delivered")
    start = time.perf_counter()
    for _ in range(messages):
        _send(producer, topic)
    if producer.flush(120):
        raise RuntimeError("messages not delivered")
    return messages / (time.perf_counter() - start)


def produce_transactional(bootstrap: str, topic: str, messages: int, commit_every_s: float = 0.1) -> float:
    producer = _producer(bootstrap, f"bench-{uuid.uuid4()}")
    start = txn_start = time.perf_counter()
    producer.begin_transaction()
    for _ in range(messages):
        _send(producer, topic)
        if time.perf_counter() - txn_start >= commit_every_s:
            producer.commit_transaction(60)
            producer.begin_transaction()
            txn_start = time.perf_counter()
    producer.commit_transaction(60)
    return messages / (time.perf_counter() - start)


def commit_latencies(bootstrap: str, topic: str, txns: int) -> list[float]:
    producer = _producer(bootstrap, f"bench-latency-{uuid.uuid4()}")
    latencies = []
    for _ in range(txns):
        producer.begin_transaction()
        for partition in range(PARTITIONS):
            _send(producer, topic, partition)
        start = time.perf_counter()
        producer.commit_transaction(60)
        latencies.append(time.perf_counter() - start)
    return latencies


def fetch_read_committed(bootstrap: str, topic: str, messages: int) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
            "queued.min.messages": 1_000_000,
            "queued.max.messages.kbytes": 1_000_000,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen = 0
    start = time.perf_counter()
    while seen < messages:
        batch = consumer.consume(min(50_000, messages - seen), timeout=1.0)
        seen += sum(1 for m in batch if m.error() is None)
    elapsed = time.perf_counter() - start
    consumer.close()
    return messages / elapsed


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


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def measure(kind: str, data_dir: Path, messages: int, txns: int) -> dict[str, float]:
    """One run of every variant on a fresh broker of ``kind``."""
    broker = BROKERS[kind](data_dir)
    start = time.perf_counter()
    with broker:
        started_s = time.perf_counter() - start
        bootstrap = broker.bootstrap_servers
        for topic in ("idempotent", "txn", "latency", "perf", "perf-txn"):
            create_topic(bootstrap, topic, partitions=PARTITIONS)
        produced = produce_idempotent(bootstrap, "idempotent", messages)
        transactional = produce_transactional(bootstrap, "txn", messages)
        latencies = commit_latencies(bootstrap, "latency", txns)
        fetched = fetch_read_committed(bootstrap, "txn", messages)
        perf = producer_perf_test(bootstrap, "perf", messages, transactional=False)
        perf_txn = producer_perf_test(bootstrap, "perf-txn", messages, transactional=True)
    return {
        "start s": started_s,
        "idempotent msgs/s": produced,
        "txn/100ms msgs/s": transactional,
        "commit p50 ms": _percentile(latencies, 0.5) * 1000,
        "commit p99 ms": _percentile(latencies, 0.99) * 1000,
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
