"""Embedded broker transactions: transactional vs idempotent produce, EndTxn latency, and
read_committed vs read_uncommitted fetch; medians over several runs, measured side by side.

Assumptions: one machine (2 cores here), the broker as a child process on loopback with
``--fsync interval``, confluent-kafka in this process as the client (both share the CPU, so numbers
are end-to-end, client included). Produce: 100-byte values, linger.ms=5, a topic of 3 partitions,
records spread round-robin by the client's default partitioner (no key). Every run measures each
variant once, in the same order, on fresh topics:

- idempotent produce (no transactions), the baseline (after one warm-up record, so that connecting
  and InitProducerId are outside the timing, as ``init_transactions`` is for the others);
- transactional produce committing every 100 ms of wall time (``commit_transaction`` flushes, so
  the producer stalls for each EndTxn round trip);
- transactional produce committing every 10,000 records;
- EndTxn latency: back-to-back transactions of 3 records (one per partition), timing
  ``commit_transaction()`` alone (it waits for the 3 records' acks, then EndTxn and its 3 markers);
- fetch of the commit-every-10k topic (data plus control batches) with isolation.level
  read_committed and read_uncommitted, by one consumer each.

Usage:
    .venv/bin/python bench/broker_transactions.py [--messages 500000] [--runs 5] [--txns 300]
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

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.clients import create_topic

PARTITIONS = 3
VALUE = b"x" * 100


def _producer(bootstrap: str, transactional_id: str | None) -> Producer:
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


def _send(producer: Producer, topic: str) -> None:
    try:
        producer.produce(topic, VALUE)
    except BufferError:
        producer.poll(0.01)
        producer.produce(topic, VALUE)


def produce_idempotent(bootstrap: str, topic: str, messages: int) -> float:
    producer = _producer(bootstrap, None)
    producer.produce(topic, VALUE)  # warm-up: connect and get a producer id, as init_transactions does
    if producer.flush(30):
        raise RuntimeError("warm-up message not delivered")
    start = time.perf_counter()
    for _ in range(messages):
        _send(producer, topic)
    if producer.flush(120):
        raise RuntimeError("messages not delivered")
    return messages / (time.perf_counter() - start)


def produce_transactional(
    bootstrap: str, topic: str, messages: int, should_commit: Callable[[int, float], bool]
) -> float:
    """Produce ``messages`` in transactions; ``should_commit(records_in_txn, txn_age_s)`` ends one."""
    producer = _producer(bootstrap, f"bench-{uuid.uuid4()}")
    start = time.perf_counter()
    producer.begin_transaction()
    in_txn, txn_start = 0, start
    for _ in range(messages):
        _send(producer, topic)
        in_txn += 1
        if should_commit(in_txn, time.perf_counter() - txn_start):
            producer.commit_transaction(60)
            producer.begin_transaction()
            in_txn, txn_start = 0, time.perf_counter()
    producer.commit_transaction(60)
    return messages / (time.perf_counter() - start)


def end_txn_latencies(bootstrap: str, topic: str, txns: int) -> list[float]:
    """Seconds taken by each commit_transaction() of a 3-partition transaction."""
    producer = _producer(bootstrap, f"bench-latency-{uuid.uuid4()}")
    latencies = []
    for _ in range(txns):
        producer.begin_transaction()
        for partition in range(PARTITIONS):
            producer.produce(topic, VALUE, partition=partition)
        start = time.perf_counter()
        producer.commit_transaction(60)
        latencies.append(time.perf_counter() - start)
    return latencies


def fetch(bootstrap: str, topic: str, messages: int, isolation_level: str) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "isolation.level": isolation_level,
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
        batch = consumer.consume(50_000, timeout=1.0)
        seen += sum(1 for m in batch if m.error() is None)
    elapsed = time.perf_counter() - start
    consumer.close()
    return messages / elapsed


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=500_000, help="records per produce/fetch variant")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--txns", type=int, default=300, help="transactions timed per run for EndTxn latency")
    args = parser.parse_args()
    rates: dict[str, list[float]] = {
        name: [] for name in ("idempotent", "txn/100ms", "txn/10k", "read_committed", "read_uncommitted")
    }
    p50s: list[float] = []
    p99s: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker(Path(tmp), fsync="interval") as broker:
        bootstrap = broker.bootstrap_servers
        for run in range(args.runs):
            topics = {name: f"{name.replace('/', '-')}-{run}" for name in ("idempotent", "txn/100ms", "txn/10k", "lat")}
            for topic in topics.values():
                create_topic(bootstrap, topic, partitions=PARTITIONS)
            rates["idempotent"].append(produce_idempotent(bootstrap, topics["idempotent"], args.messages))
            rates["txn/100ms"].append(
                produce_transactional(bootstrap, topics["txn/100ms"], args.messages, lambda _n, age: age >= 0.1)
            )
            rates["txn/10k"].append(
                produce_transactional(bootstrap, topics["txn/10k"], args.messages, lambda n, _age: n >= 10_000)
            )
            latencies = end_txn_latencies(bootstrap, topics["lat"], args.txns)
            p50s.append(_percentile(latencies, 0.50))
            p99s.append(_percentile(latencies, 0.99))
            rates["read_committed"].append(fetch(bootstrap, topics["txn/10k"], args.messages, "read_committed"))
            rates["read_uncommitted"].append(fetch(bootstrap, topics["txn/10k"], args.messages, "read_uncommitted"))
            line = ", ".join(f"{name} {values[-1]:,.0f}" for name, values in rates.items())
            print(f"run {run + 1}/{args.runs} (msgs/s): {line}; EndTxn p50 {p50s[-1] * 1000:.2f} ms", flush=True)
    median = {name: statistics.median(values) for name, values in rates.items()}
    base = median["idempotent"]
    print(f"idempotent produce:              {base:,.0f} msgs/s")
    print(f"transactional, commit per 100ms: {median['txn/100ms']:,.0f} msgs/s ({median['txn/100ms'] / base:.2f}x)")
    print(f"transactional, commit per 10k:   {median['txn/10k']:,.0f} msgs/s ({median['txn/10k'] / base:.2f}x)")
    print(
        f"EndTxn latency (3 partitions):   p50 {statistics.median(p50s) * 1000:.2f} ms, "
        f"p99 {statistics.median(p99s) * 1000:.2f} ms (median over runs, {args.txns} txns each)"
    )
    committed, uncommitted = median["read_committed"], median["read_uncommitted"]
    print(f"fetch read_committed:            {committed:,.0f} msgs/s")
    print(
        f"fetch read_uncommitted:          {uncommitted:,.0f} msgs/s (read_committed = {committed / uncommitted:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
