"""read_committed with confluent-kafka: committed data only, the LSO, and ListOffsets by isolation level."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from kio.schema.list_offsets.v7.request import ListOffsetsRequest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.broker.protocol.shapes import build_entity
from onceflow.testing.broker.clients import create_topic, produce_acked, read_topic
from onceflow.testing.broker.wire import WireClient

LATEST = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1


def _transactional(bootstrap: str, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 1})
    producer.init_transactions(30)
    return producer


def _write(producer: Producer, topic: str, values: list[bytes], partitions: int = 3) -> None:
    for index, value in enumerate(values):
        producer.produce(topic, value=value, partition=index % partitions)
    assert producer.flush(30) == 0


def _latest_offset(bootstrap: str, topic: str, partition: int, isolation_level: int) -> int:
    request = build_entity(
        ListOffsetsRequest,
        {
            "replica_id": -1,
            "isolation_level": isolation_level,
            "topics": [{"name": topic, "partitions": [{"partition_index": partition, "timestamp": LATEST}]}],
        },
    )
    with WireClient(bootstrap) as client:
        response = client.request(request)
    return int(response.topics[0].partitions[0].offset)


def test_read_committed_sees_committed_records_only(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "rc", partitions=3)
    producer = _transactional(bootstrap, "rc-writer")
    committed: list[bytes] = []
    aborted: list[bytes] = []
    for round_number in range(4):
        values = [f"r{round_number}-{i}".encode() for i in range(9)]
        producer.begin_transaction()
        _write(producer, "rc", values)
        if round_number % 2 == 0:
            producer.commit_transaction(30)
            committed += values
        else:
            producer.abort_transaction(30)
            aborted += values
    producer.begin_transaction()
    still_open = [f"open-{i}".encode() for i in range(9)]
    _write(producer, "rc", still_open)

    seen_committed = [r.value or b"" for r in read_topic(bootstrap, "rc", idle_timeout=1.0)]
    seen_all = [r.value or b"" for r in read_topic(bootstrap, "rc", isolation_level="read_uncommitted")]

    assert sorted(seen_committed) == sorted(committed)
    assert len(seen_committed) == len(set(seen_committed))
    assert sorted(seen_all) == sorted(committed + aborted + still_open)
    producer.abort_transaction(30)


def test_open_transaction_holds_back_a_later_plain_write(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "lso", partitions=1)
    producer = _transactional(bootstrap, "lso-writer")
    producer.begin_transaction()
    _write(producer, "lso", [b"txn-1", b"txn-2"], partitions=1)
    (plain,) = produce_acked(bootstrap, "lso", [b"plain"], partition=0)
    assert plain[1] == 2

    assert read_topic(bootstrap, "lso", idle_timeout=0.5) == []
    assert _latest_offset(bootstrap, "lso", 0, READ_COMMITTED) == 0
    assert _latest_offset(bootstrap, "lso", 0, READ_UNCOMMITTED) == 3

    producer.commit_transaction(30)
    records = read_topic(bootstrap, "lso", idle_timeout=0.5)
    assert [(r.offset, r.value) for r in records] == [(0, b"txn-1"), (1, b"txn-2"), (2, b"plain")]
    assert _latest_offset(bootstrap, "lso", 0, READ_COMMITTED) == 4  # the COMMIT marker is at offset 3


def test_aborted_records_interleaved_with_committed_ones_are_filtered(broker: EmbeddedBroker) -> None:
    """Two producers interleave in one partition; the aborted one's batches sit between committed ones."""
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "mixed", partitions=1)
    keep = _transactional(bootstrap, "mixed-keep")
    drop = _transactional(bootstrap, "mixed-drop")
    keep.begin_transaction()
    drop.begin_transaction()
    for i in range(20):
        _write(keep if i % 2 == 0 else drop, "mixed", [f"{'k' if i % 2 == 0 else 'd'}{i}".encode()], partitions=1)
    drop.abort_transaction(30)
    keep.commit_transaction(30)
    values = [r.value for r in read_topic(bootstrap, "mixed", idle_timeout=0.5)]
    assert values == [f"k{i}".encode() for i in range(0, 20, 2)]


def test_commit_wakes_a_read_committed_long_poll(broker: EmbeddedBroker) -> None:
    """The COMMIT marker wakes fetches waiting behind the LSO, like an append would: the reader gets
    the records well before its long poll (fetch.wait.max.ms) would have ended."""
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "wake", partitions=1)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "wake",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 10_000,
            "socket.timeout.ms": 30_000,
        }
    )
    consumer.assign([TopicPartition("wake", 0, 0)])
    producer = _transactional(bootstrap, "wake-writer")
    producer.begin_transaction()
    _write(producer, "wake", [b"w1"], partitions=1)
    assert consumer.poll(1.0) is None
    time.sleep(0.5)  # the consumer's fetch is now parked behind the LSO
    committed_at = time.monotonic()
    producer.commit_transaction(30)
    message = consumer.poll(8.0)
    assert message is not None and message.value() == b"w1"
    assert time.monotonic() - committed_at < 3.0
    consumer.close()
