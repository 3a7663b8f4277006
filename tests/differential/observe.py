"""What the differential tests observe through the clients, as plain comparable values."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from kio.schema.list_offsets.v7.request import ListOffsetsRequest

from onceflow.broker.protocol.shapes import build_entity
from onceflow.testing.broker.apache_kafka import DEFAULT_SETTINGS
from onceflow.testing.broker.clients import create_topic, read_topic
from onceflow.testing.broker.wire import WireClient

SWEEP_INTERVAL_MS = int(str(DEFAULT_SETTINGS["transaction.abort.timed.out.transaction.cleanup.interval.ms"]))
"""How often both brokers abort timed-out transactions."""

T = TypeVar("T")


@dataclass(frozen=True)
class BrokerUnderTest:
    kind: str
    bootstrap_servers: str


@dataclass(frozen=True)
class Brokers:
    embedded: BrokerUnderTest
    apache_kafka: BrokerUnderTest

    def observe(self, scenario: Callable[[BrokerUnderTest], T]) -> dict[str, T]:
        """Run ``scenario`` on each broker; ``{kind: what it observed}``."""
        return {b.kind: scenario(b) for b in (self.embedded, self.apache_kafka)}


def unique(prefix: str) -> str:
    """A topic, group or transactional id no other scenario uses."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@dataclass(frozen=True)
class ClientError:
    """A KafkaError as the application sees it."""

    name: str
    fatal: bool
    retriable: bool
    txn_requires_abort: bool

    @classmethod
    def of(cls, exc: KafkaException) -> ClientError:
        error: KafkaError = exc.args[0]
        return cls(error.name(), error.fatal(), error.retriable(), error.txn_requires_abort())


def new_topic(broker: BrokerUnderTest, prefix: str, partitions: int = 1) -> str:
    """Create a topic named after ``prefix`` and wait until the broker serves every partition of it
    (Apache Kafka acknowledges CreateTopics before its broker has applied the leadership)."""
    topic = unique(prefix)
    create_topic(broker.bootstrap_servers, topic, partitions=partitions)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})

    def served() -> bool:
        found = admin.list_topics(topic, timeout=10).topics[topic]
        return (
            found.error is None
            and len(found.partitions) == partitions
            and all(p.leader >= 0 and p.error is None for p in found.partitions.values())
        )

    wait_until(served, what=f"leaders for {topic}")
    with WireClient(broker.bootstrap_servers) as client:
        request = build_entity(ListOffsetsRequest, _list_offsets_request(topic, partitions))
        wait_until(lambda: _all_answer(client.request(request)), what=f"ListOffsets on {topic}")
    return topic


def _list_offsets_request(topic: str, partitions: int) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [{"name": topic, "partitions": [{"partition_index": p, "timestamp": -1} for p in range(partitions)]}],
    }


def _all_answer(response: Any) -> bool:
    return all(int(p.error_code) == 0 for t in response.topics for p in t.partitions)


def transactional_producer(broker: BrokerUnderTest, transactional_id: str, **config: Any) -> Producer:
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": transactional_id, "linger.ms": 0, **config}
    )
    producer.init_transactions(30)
    return producer


def produce(producer: Producer, topic: str, *values: bytes, partition: int = 0) -> None:
    for value in values:
        producer.produce(topic, value=value, partition=partition)
    assert producer.flush(30) == 0


def records(broker: BrokerUnderTest, topic: str, isolation_level: str) -> list[tuple[int, bytes | None]]:
    """``(offset, value)`` of every record a consumer at ``isolation_level`` reads from partition 0."""
    return [
        (r.offset, r.value)
        for r in read_topic(broker.bootstrap_servers, topic, isolation_level=isolation_level, idle_timeout=0.3)
    ]


def end_offsets(broker: BrokerUnderTest, topic: str, partition: int = 0) -> dict[str, int]:
    """ListOffsets(latest) at both isolation levels: the high watermark and the last stable offset."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    answer: dict[str, int] = {}
    for name, level in (("high_watermark", IsolationLevel.READ_UNCOMMITTED), ("lso", IsolationLevel.READ_COMMITTED)):
        tp = TopicPartition(topic, partition)
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        futures = admin.list_offsets({tp: latest}, isolation_level=level, request_timeout=10)
        answer[name] = int(futures[tp].result(timeout=30).offset)
    return answer


def settle(broker: BrokerUnderTest, topic: str, partition: int = 0) -> None:
    """Wait until no transaction is open on the partition (LSO = HW). Apache Kafka writes the markers
    of a committed or aborted transaction after it answered EndTxn, so a read right after
    ``commit_transaction()`` may still stop before them; the embedded broker writes them first."""

    def stable() -> bool:
        offsets = end_offsets(broker, topic, partition)
        return offsets["lso"] == offsets["high_watermark"]

    wait_until(stable, what=f"markers written on {topic}-{partition}")


def wait_until(condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached within {timeout}s")
        time.sleep(0.1)


def consumer(broker: BrokerUnderTest, group: str, **config: Any) -> Consumer:
    settings: Mapping[str, Any] = {
        "bootstrap.servers": broker.bootstrap_servers,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        **config,
    }
    return Consumer(dict(settings))
