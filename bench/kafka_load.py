"""The Kafka client load of the broker benchmarks: one producer setup, the timed produce loops, one timed drain.

``broker_throughput.py``, ``broker_transactions.py`` and ``kafka_vs_embedded.py`` measure the same
client work against different brokers and settings; they share it from here, so their figures
stay comparable: an idempotent producer with ``linger.ms`` 5 (through onceflow's own
``produce``, which waits while librdkafka's queue is full), a consumer with librdkafka's prefetch
queue opened up (its default, 100k messages / 64 MiB, otherwise caps one consumer).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from confluent_kafka import Consumer, Producer, TopicPartition

from onceflow.core.kafka import idempotent_producer_config, produce, transactional_producer_config

#: ``commit_when(records in the transaction, its age in seconds)``: end the open transaction now.
CommitWhen = Callable[[int, float], bool]


def bench_producer(bootstrap: str, transactional_id: str | None = None) -> Producer:
    """An idempotent producer (transactional, its transactions initialised, when given an id)."""
    base = {"bootstrap.servers": bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 500_000}
    if transactional_id is None:
        return Producer(idempotent_producer_config(base))
    producer = Producer(transactional_producer_config(base, transactional_id))
    producer.init_transactions(30)
    return producer


def produce_idempotent(bootstrap: str, topic: str, messages: int, value: bytes) -> float:
    """Messages/s of an idempotent producer, its connection and producer id made before the clock starts."""
    producer = bench_producer(bootstrap)
    produce(producer, topic, value=value)
    if producer.flush(60):
        raise RuntimeError("warm-up message not delivered")
    start = time.perf_counter()
    for _ in range(messages):
        produce(producer, topic, value=value)
    if producer.flush(120):
        raise RuntimeError("messages not delivered")
    return messages / (time.perf_counter() - start)


def produce_transactional(bootstrap: str, topic: str, messages: int, value: bytes, commit_when: CommitWhen) -> float:
    """Messages/s produced in transactions that ``commit_when`` ends (the last one at the end)."""
    producer = bench_producer(bootstrap, f"bench-{uuid.uuid4()}")
    start = txn_start = time.perf_counter()
    producer.begin_transaction()
    in_txn = 0
    for _ in range(messages):
        produce(producer, topic, value=value)
        in_txn += 1
        if commit_when(in_txn, time.perf_counter() - txn_start):
            producer.commit_transaction(60)
            producer.begin_transaction()
            in_txn, txn_start = 0, time.perf_counter()
    producer.commit_transaction(60)
    return messages / (time.perf_counter() - start)


def commit_latencies(bootstrap: str, topic: str, txns: int, partitions: int, value: bytes) -> list[float]:
    """Seconds taken by each ``commit_transaction`` of a transaction with one record per partition."""
    producer = bench_producer(bootstrap, f"bench-latency-{uuid.uuid4()}")
    latencies = []
    for _ in range(txns):
        producer.begin_transaction()
        for partition in range(partitions):
            produce(producer, topic, value=value, partition=partition)
        start = time.perf_counter()
        producer.commit_transaction(60)
        latencies.append(time.perf_counter() - start)
    return latencies


def drain(
    bootstrap: str, topic: str, partitions: int, messages: int, isolation_level: str = "read_uncommitted"
) -> float:
    """Messages/s of one consumer reading ``messages`` from the start of ``topic``'s partitions."""
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
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = 0
    start = time.perf_counter()
    while seen < messages:
        batch = consumer.consume(min(50_000, messages - seen), timeout=1.0)
        seen += sum(1 for m in batch if m.error() is None)
    elapsed = time.perf_counter() - start
    consumer.close()
    return messages / elapsed
