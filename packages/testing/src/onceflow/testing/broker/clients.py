"""Small confluent-kafka helpers shared by tests of every package: create topics, produce with
acks tracked, and read a whole topic back.

They are for tests and benchmarks, not for the product: the product's clients live with the
services that own them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from onceflow.core.kafka import await_served, idempotent_producer_config, produce


def _int(value: int | None) -> int:
    """Partition and offset of a delivered or consumed message are always set."""
    assert value is not None
    return value


@dataclass(frozen=True)
class ConsumedRecord:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def create_topic(
    bootstrap: str, topic: str, partitions: int = 1, config: Mapping[str, str] | None = None, timeout: float = 30
) -> None:
    """Create ``topic`` and wait until the brokers serve it; an existing topic is an error."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1, config=dict(config or {}))],
        operation_timeout=timeout,
    )
    futures[topic].result(timeout=timeout)
    await_served(admin, [topic], timeout=timeout)


def produce_acked(
    bootstrap: str,
    topic: str,
    values: Iterable[bytes],
    *,
    partition: int | None = None,
    config: Mapping[str, Any] | None = None,
    timeout: float = 120,
) -> list[tuple[int, int, bytes]]:
    """Produce ``values`` and return ``(partition, offset, value)`` of every acknowledged record.

    Raises if any record fails for good (its delivery report carries an error).
    """
    acked: list[tuple[int, int, bytes]] = []
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked.append((_int(msg.partition()), _int(msg.offset()), msg.value() or b""))

    producer = Producer(idempotent_producer_config({"bootstrap.servers": bootstrap}, **dict(config or {})))
    placement = {} if partition is None else {"partition": partition}
    for value in values:
        produce(producer, topic, value=value, on_delivery=on_delivery, **placement)
        producer.poll(0)
    remaining = producer.flush(timeout)
    if remaining or errors:
        raise AssertionError(f"{remaining} records unacknowledged, {len(errors)} failed: {errors[:3]}")
    return acked


class ReadOptions(TypedDict, total=False):
    """How :func:`read_messages` reads (its keyword arguments, with their defaults there)."""

    isolation_level: str
    idle_timeout: float
    timeout: float
    partitions: int | None


def _headers(msg: Message) -> tuple[tuple[str, bytes | None], ...]:
    """A consumed record's headers in order (a consumed record's header values are bytes or None)."""
    headers = msg.headers() or []
    pairs = headers.items() if isinstance(headers, dict) else headers
    return tuple((name, value.encode() if isinstance(value, str) else value) for name, value in pairs)


def read_topic(bootstrap: str, topic: str, **options: Unpack[ReadOptions]) -> list[ConsumedRecord]:
    """Every record of ``topic`` from the beginning, in offset order per partition (see :func:`read_messages`)."""
    return [
        ConsumedRecord(_int(msg.partition()), _int(msg.offset()), msg.key(), msg.value(), _headers(msg))
        for msg in read_messages(bootstrap, topic, **options)
    ]


def read_messages(
    bootstrap: str,
    topic: str,
    *,
    isolation_level: str = "read_committed",
    idle_timeout: float = 3.0,
    timeout: float = 120,
    partitions: int | None = None,
) -> list[Message]:
    """Every message of ``topic`` from the beginning (the first ``partitions``, default all), in offset
    order per partition.

    Reads until every partition has reached its end offset (as seen by ``isolation_level``)
    and nothing new arrived for ``idle_timeout`` seconds; ``TimeoutError`` after ``timeout``.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-topic-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": isolation_level,
            "enable.partition.eof": True,
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=30)
        count = partitions if partitions is not None else len(metadata.topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in range(count)])
        messages: list[Message] = []
        at_eof: set[int] = set()
        deadline = time.monotonic() + timeout
        last_data = time.monotonic()
        while time.monotonic() < deadline:
            batch = consumer.consume(10_000, timeout=0.2)
            for msg in batch:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        at_eof.add(_int(msg.partition()))
                        continue
                    raise KafkaException(err)
                at_eof.discard(_int(msg.partition()))
                messages.append(msg)
                last_data = time.monotonic()
            if len(at_eof) == count and time.monotonic() - last_data >= idle_timeout:
                return messages
        raise TimeoutError(f"reading {topic} did not reach the end within {timeout}s ({len(messages)} records)")
    finally:
        consumer.close()
