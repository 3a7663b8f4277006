"""confluent-kafka transactions against the broker: zombie fencing, and consumer offsets in a
transaction (KIP-98, KIP-447)."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kio.schema.add_offsets_to_txn.v1.request import AddOffsetsToTxnRequest as AddOffsetsToTxnRequestV1
from kio.schema.add_offsets_to_txn.v3.request import AddOffsetsToTxnRequest
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.offset_fetch.v7.request import OffsetFetchRequest
from kio.schema.txn_offset_commit.v3.request import TxnOffsetCommitRequest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.broker.protocol.shapes import build_entity
from onceflow.testing.broker.clients import create_topic, produce_acked, read_topic
from onceflow.testing.broker.wire import WireClient

FENCED = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
NO_OFFSET = -1001  # librdkafka's OFFSET_INVALID


def _transactional(bootstrap: str, transactional_id: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 1})
    producer.init_transactions(30)
    return producer


def _write(producer: Producer, topic: str, values: list[bytes], partitions: int = 3) -> None:
    for index, value in enumerate(values):
        producer.produce(topic, value=value, partition=index % partitions)
    assert producer.flush(30) == 0


def _assert_fenced(error: KafkaException) -> None:
    kafka_error = error.args[0]
    assert kafka_error.code() in FENCED, kafka_error
    assert kafka_error.fatal(), kafka_error


def test_second_instance_fences_the_first_whose_open_transaction_is_aborted(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "fence", partitions=3)
    zombie = _transactional(bootstrap, "fence-writer")
    zombie.begin_transaction()
    _write(zombie, "fence", [f"zombie-{i}".encode() for i in range(6)])

    successor = _transactional(bootstrap, "fence-writer")
    successor.begin_transaction()
    _write(successor, "fence", [f"successor-{i}".encode() for i in range(6)])
    successor.commit_transaction(30)

    with pytest.raises(KafkaException) as produce_error:
        zombie.produce("fence", value=b"zombie-late", partition=0)
        zombie.flush(10)
        zombie.commit_transaction(10)
    _assert_fenced(produce_error.value)

    values = sorted(r.value for r in read_topic(bootstrap, "fence", idle_timeout=0.5) if r.value is not None)
    assert values == sorted(f"successor-{i}".encode() for i in range(6))


def test_fenced_producer_cannot_commit(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "fence-commit", partitions=3)
    zombie = _transactional(bootstrap, "fence-commit-writer")
    zombie.begin_transaction()
    _write(zombie, "fence-commit", [b"z0", b"z1", b"z2"])
    _transactional(bootstrap, "fence-commit-writer")

    with pytest.raises(KafkaException) as commit_error:
        zombie.commit_transaction(10)
    _assert_fenced(commit_error.value)
    assert read_topic(bootstrap, "fence-commit", idle_timeout=0.5) == []


def _joined_consumer(bootstrap: str, group: str, topic: str) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "session.timeout.ms": 6000,
        }
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while not consumer.assignment():
        assert time.monotonic() < deadline, "no assignment"
        consumer.poll(0.2)
    return consumer


def test_offsets_sent_to_a_transaction_appear_only_on_commit(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "in", partitions=1)
    create_topic(bootstrap, "out", partitions=1)
    produce_acked(bootstrap, "in", [f"v{i}".encode() for i in range(20)])
    consumer = _joined_consumer(bootstrap, "ctp", "in")
    producer = _transactional(bootstrap, "ctp-writer")
    partition = TopicPartition("in", 0)

    producer.begin_transaction()
    _write(producer, "out", [b"aborted"], partitions=1)
    producer.send_offsets_to_transaction([TopicPartition("in", 0, 5)], consumer.consumer_group_metadata(), 30)
    producer.abort_transaction(30)
    assert consumer.committed([partition], 10)[0].offset == NO_OFFSET

    producer.begin_transaction()
    _write(producer, "out", [b"committed"], partitions=1)
    producer.send_offsets_to_transaction([TopicPartition("in", 0, 7)], consumer.consumer_group_metadata(), 30)
    producer.commit_transaction(30)
    assert consumer.committed([partition], 10)[0].offset == 7
    assert [r.value for r in read_topic(bootstrap, "out", idle_timeout=0.5)] == [b"committed"]
    consumer.close()


def _init_transactional(client: WireClient, transactional_id: str) -> tuple[int, int]:
    answer = client.request(
        build_entity(InitProducerIdRequest, {"transactional_id": transactional_id, "transaction_timeout": 60_000})
    )
    assert answer.error_code is ErrorCode.none
    return int(answer.producer_id), int(answer.producer_epoch)


def _offset_fetch(client: WireClient, group: str, topic: str) -> tuple[ErrorCode, ErrorCode, int]:
    answer = client.request(
        build_entity(
            OffsetFetchRequest,
            {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}], "require_stable": True},
        )
    )
    (entry,) = answer.topics[0].partitions
    return answer.error_code, entry.error_code, int(entry.committed_offset)


def test_pending_offsets_are_unstable_and_generation_is_checked(broker: EmbeddedBroker) -> None:
    """Raw protocol: TxnOffsetCommit checks the member; OffsetFetch(require_stable) reports
    UNSTABLE_OFFSET_COMMIT per partition (top level NONE) while the offsets are pending."""
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "pending", partitions=1)
    group = f"pending-{uuid.uuid4().hex[:6]}"
    with WireClient(bootstrap) as client:
        producer_id, epoch = _init_transactional(client, "pending-writer")
        ids = {"transactional_id": "pending-writer", "producer_id": producer_id, "producer_epoch": epoch}
        added = client.request(build_entity(AddOffsetsToTxnRequest, {**ids, "group_id": group}))
        assert added.error_code is ErrorCode.none

        def commit(generation: int, member: str) -> ErrorCode:
            answer = client.request(
                build_entity(
                    TxnOffsetCommitRequest,
                    {
                        **ids,
                        "group_id": group,
                        "generation_id": generation,
                        "member_id": member,
                        "topics": [
                            {
                                "name": "pending",
                                "partitions": [{"partition_index": 0, "committed_offset": 3, "committed_metadata": ""}],
                            }
                        ],
                    },
                )
            )
            return ErrorCode(answer.topics[0].partitions[0].error_code)

        assert commit(4, "no-such-member") is ErrorCode.unknown_member_id
        assert commit(-1, "") is ErrorCode.none
        assert _offset_fetch(client, group, "pending") == (ErrorCode.none, ErrorCode.unstable_offset_commit, -1)

        stale = {**ids, "producer_epoch": epoch - 1}
        fenced = client.request(build_entity(AddOffsetsToTxnRequest, {**stale, "group_id": group}))
        assert fenced.error_code is ErrorCode.producer_fenced
        fenced_v1 = client.request(build_entity(AddOffsetsToTxnRequestV1, {**stale, "group_id": group}))
        assert fenced_v1.error_code is ErrorCode.invalid_producer_epoch  # KIP-588: v1 predates PRODUCER_FENCED

        ended = client.request(build_entity(EndTxnRequest, {**ids, "committed": True}))
        assert ended.error_code is ErrorCode.none
        assert _offset_fetch(client, group, "pending") == (ErrorCode.none, ErrorCode.none, 3)
