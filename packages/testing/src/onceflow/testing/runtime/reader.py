"""Read a whole topic back with headers and timestamps (the broker's test reader drops headers)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: dict[str, bytes]


def read_records(
    bootstrap: str,
    topic: str,
    *,
    isolation_level: str = "read_committed",
    idle_timeout: float = 1.0,
    timeout: float = 120,
) -> list[Record]:
    """Every record of ``topic``, in offset order per partition, up to the end seen by ``isolation_level``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-records-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "isolation.level": isolation_level,
            "enable.partition.eof": True,
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        records: list[Record] = []
        at_eof: set[int] = set()
        deadline = time.monotonic() + timeout
        last = time.monotonic()
        while time.monotonic() < deadline:
            for msg in consumer.consume(10_000, timeout=0.2):
                error = msg.error()
                partition, offset = msg.partition(), msg.offset()
                assert partition is not None and offset is not None
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(error)
                    at_eof.add(partition)
                    continue
                at_eof.discard(partition)
                headers: dict[str, bytes] = {}
                for header in msg.headers() or []:
                    value = header[1]
                    headers[header[0]] = value if isinstance(value, bytes) else (value or "").encode()
                records.append(Record(partition, offset, msg.key(), msg.value(), msg.timestamp()[1], headers))
                last = time.monotonic()
            if len(at_eof) == len(partitions) and time.monotonic() - last >= idle_timeout:
                return records
        raise TimeoutError(f"reading {topic} did not reach its end within {timeout}s ({len(records)} records)")
    finally:
        consumer.close()
