"""Read a whole topic with read_committed, from the beginning to its end offsets at the start."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from onceflow.core.kafka.retry import RetryPolicy, is_transient, retry_transient
from onceflow.core.kafka.routed import watermark_offsets
from onceflow.core.settings import KafkaSettings


@dataclass(frozen=True)
class TopicRecord:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()

    def header(self, name: str) -> bytes | None:
        """The last value of header ``name`` (None when absent)."""
        found = [value for key, value in self.headers if key == name]
        return found[-1] if found else None


class TopicNotFound(KafkaException):
    """The topic does not exist (or its metadata has an error)."""


def _headers(raw: object) -> tuple[tuple[str, bytes], ...]:
    """librdkafka's headers (a list of pairs, or None) as ``(name, bytes)`` pairs."""
    if not isinstance(raw, list):
        return ()
    return tuple((str(k), v if isinstance(v, bytes) else str(v or "").encode()) for k, v in raw)


def read_committed(kafka: KafkaSettings, topic: str, *, timeout: float = 120.0) -> Iterator[TopicRecord]:
    """Every committed record of ``topic``, in offset order per partition.

    Steps:
        1. Take the end offsets of every partition as a read_committed consumer sees them (the last
           stable offset: an open transaction and what follows it are not part of the cut).
        2. Read every partition from the beginning with ``isolation.level=read_committed``
           (aborted records and control records are skipped) until it reaches its end offset.

    Records produced after step 1 are not returned, so the cut is consistent while writers go on.
    Transient errors (a broker down, a leader moving) are retried within ``timeout``.
    """
    policy = RetryPolicy(timeout_s=timeout)
    consumer = Consumer(
        kafka.client_config(
            **{
                "group.id": f"onceflow-read-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
            }
        )
    )
    try:
        metadata = retry_transient(
            lambda: consumer.list_topics(topic, timeout=timeout), what=f"metadata of {topic}", policy=policy
        )
        described = metadata.topics.get(topic)
        if described is None or described.error is not None:
            raise TopicNotFound(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, f"topic {topic} does not exist"))
        # Step 1
        ends: dict[int, int] = {}
        for partition in sorted(described.partitions):
            _, high = watermark_offsets(consumer, TopicPartition(topic, partition), policy=policy)
            ends[partition] = high
        # Step 2
        remaining = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in sorted(remaining)])
        deadline = time.monotonic() + timeout
        while remaining:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} did not reach its end offsets {ends} within {timeout}s")
            for message in consumer.consume(10_000, timeout=0.2):
                partition, offset = message.partition(), message.offset()
                error = message.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    if is_transient(error):
                        continue  # the client recovers by itself (consumer errors are informational)
                    raise KafkaException(error)
                if partition is None or offset is None:
                    continue
                if error is not None:
                    if offset >= ends.get(partition, 0):
                        remaining.discard(partition)
                    continue
                if partition not in remaining or offset >= ends[partition]:
                    continue
                headers = _headers(message.headers())
                yield TopicRecord(partition, offset, message.key(), message.value(), headers)
                if offset + 1 >= ends[partition]:
                    remaining.discard(partition)
    finally:
        consumer.close()
