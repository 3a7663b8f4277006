"""The input of a Spark job under test or benchmark: generated AccessEvents in committed Kafka transactions.

:func:`produce_events` writes values the way onceflow's source connectors do, in transactions, so
the source topic has control records between the data (the job must skip them and read only
committed records); :func:`encoded_events` are the log producer's generated events (its traffic
model, whose truth :mod:`onceflow.ipcount.traffic.truth` computes) as Avro single-object values.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from confluent_kafka import Producer

from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.core.kafka import produce, transactional_producer_config
from onceflow.core.topics import SOURCE_TOPIC
from onceflow.ipcount.traffic.model import TrafficModel, event


def encoded_events(model: TrafficModel, start: int, stop: int) -> list[bytes]:
    """Events ``start`` to ``stop`` (excluded) of ``model``, encoded as the source topic holds them."""
    return [ACCESS_EVENT_SERDE.encode(event(model, i)) for i in range(start, stop)]


def produce_events(
    bootstrap: str,
    values: Iterable[bytes],
    *,
    topic: str = SOURCE_TOPIC,
    transaction_size: int = 1000,
    partitions: int = 2,
) -> int:
    """Produce ``values`` round-robin over ``partitions`` in committed transactions; returns the count."""
    transactional_id = f"test-source-{uuid.uuid4().hex[:8]}"
    config = transactional_producer_config({"bootstrap.servers": bootstrap}, transactional_id, **{"linger.ms": 5})
    producer = Producer(config)
    producer.init_transactions(30)
    produced = 0
    open_txn = False
    for value in values:
        if not open_txn:
            producer.begin_transaction()
            open_txn = True
        produce(producer, topic, value=value, partition=produced % partitions)
        produced += 1
        if produced % transaction_size == 0:
            producer.commit_transaction(60)
            open_txn = False
    if open_txn:
        producer.commit_transaction(60)
    return produced
