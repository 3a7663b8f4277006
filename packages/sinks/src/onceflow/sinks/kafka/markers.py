"""Commit markers of the Kafka sink: the last batch of a job committed to the sink topic."""

from __future__ import annotations

import time
import uuid
from typing import Final

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic

from onceflow.core.kafka import ensure_topics as create_missing
from onceflow.core.settings import KafkaSettings

NO_BATCH: Final = -1


def marker_key(sink: str, job: str) -> bytes:
    """The marker record's key: ``<sink>:<job>``."""
    return f"{sink}:{job}".encode()


def marker_value(batch: int) -> bytes:
    """The marker record's value: the batch number in decimal."""
    return str(batch).encode()


def ensure_topics(kafka: KafkaSettings, topic: str, commits_topic: str, timeout: float = 30.0) -> None:
    """Create the sink topic and the compacted commits topic if they do not exist yet."""
    wanted = [
        NewTopic(name, num_partitions=1, replication_factor=1, config=config)
        for name, config in ((topic, {}), (commits_topic, {"cleanup.policy": "compact"}))
    ]
    create_missing(kafka.client_config(), wanted, timeout=timeout)


def read_last_committed(kafka: KafkaSettings, commits_topic: str, key: bytes, timeout: float = 60.0) -> int:
    """The highest batch committed under ``key`` (read_committed), or :data:`NO_BATCH`.

    Reads the compacted commits topic from the beginning up to its last stable offset. Call it
    only after ``init_transactions`` of the producer that writes ``key``: that aborts any
    transaction a predecessor left open, which would otherwise hold the last stable offset back.
    """
    consumer = Consumer(
        kafka.client_config(
            **{
                "group.id": f"onceflow-sink-markers-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
            }
        )
    )
    try:
        metadata = consumer.list_topics(commits_topic, timeout=timeout)
        described = metadata.topics.get(commits_topic)
        if described is None or described.error is not None:
            return NO_BATCH
        partitions = list(described.partitions)
        consumer.assign([TopicPartition(commits_topic, p, 0) for p in partitions])
        last = NO_BATCH
        at_eof: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(at_eof) < len(partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading commit markers from {commits_topic} did not finish within {timeout}s")
            for message in consumer.consume(1000, timeout=0.2):
                error = message.error()
                partition = message.partition()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF and partition is not None:
                        at_eof.add(partition)
                        continue
                    raise KafkaException(error)
                if partition is not None:
                    at_eof.discard(partition)
                value = message.value()
                if message.key() == key and value is not None:
                    last = max(last, int(value.decode()))
        return last
    finally:
        consumer.close()
