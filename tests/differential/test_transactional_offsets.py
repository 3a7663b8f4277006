"""KIP-447 transactional offsets beyond the happy path: pending offsets of an open transaction
(OffsetFetch with and without ``require_stable``) and a producer presenting the group metadata of
an older generation. The same on the embedded broker and on Apache Kafka."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from kio.schema.errors import ErrorCode
from kio.schema.offset_fetch.v7.request import OffsetFetchRequest

from onceflow.broker.protocol.shapes import build_entity
from onceflow.testing.broker.clients import produce_acked
from onceflow.testing.broker.wire import WireClient

from .observe import (
    Brokers,
    BrokerUnderTest,
    ClientError,
    consumer,
    new_topic,
    transactional_producer,
    unique,
    wait_until,
)


def _fetch(broker: BrokerUnderTest, group: str, topic: str, *, require_stable: bool) -> tuple[int, str]:
    """OffsetFetch v7 of partition 0: (committed offset, error name)."""
    request = build_entity(
        OffsetFetchRequest,
        {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}], "require_stable": require_stable},
    )
    with WireClient(broker.bootstrap_servers) as client:
        answer = client.request(request)
    (partition,) = answer.topics[0].partitions
    error = ErrorCode(partition.error_code) if partition.error_code else ErrorCode(answer.error_code)
    return int(partition.committed_offset), error.name


def _fetch_settled(broker: BrokerUnderTest, group: str, topic: str) -> tuple[int, str]:
    """OffsetFetch with ``require_stable``, retried while UNSTABLE_OFFSET_COMMIT (as clients do):
    Apache Kafka completes the offsets of a committed transaction after it answered EndTxn."""
    answers: list[tuple[int, str]] = []

    def settled() -> bool:
        answers.append(_fetch(broker, group, topic, require_stable=True))
        return answers[-1][1] != "unstable_offset_commit"

    wait_until(settled, what=f"stable offsets of {group}")
    return answers[-1]


def _pending_offsets(broker: BrokerUnderTest) -> dict[str, Any]:
    topic, group = new_topic(broker, "pending"), unique("pending-group")
    produce_acked(broker.bootstrap_servers, topic, [b"%d" % i for i in range(10)], partition=0)
    member = consumer(broker, group)
    try:
        member.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
        producer = transactional_producer(broker, unique("pending-txn"))
        producer.begin_transaction()
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 8)], member.consumer_group_metadata(), 30)
        during = {
            "stable": _fetch(broker, group, topic, require_stable=True),
            "unstable": _fetch(broker, group, topic, require_stable=False),
        }
        producer.commit_transaction(30)
        return {"during": during, "after": _fetch_settled(broker, group, topic)}
    finally:
        member.close()


def test_pending_transactional_offsets_are_unstable_until_the_commit(brokers: Brokers) -> None:
    observed = brokers.observe(_pending_offsets)
    assert observed["embedded"] == observed["apache-kafka"]
    assert observed["apache-kafka"] == {
        "during": {"stable": (-1, "unstable_offset_commit"), "unstable": (3, "none")},
        "after": (8, "none"),
    }


def _assigned(member: Consumer) -> int:
    return len(member.assignment())


def _stale_generation(broker: BrokerUnderTest) -> dict[str, Any]:
    topic, group = new_topic(broker, "generation", partitions=2), unique("generation-group")
    first, second = consumer(broker, group), consumer(broker, group)
    try:
        first.subscribe([topic])
        wait_until(lambda: first.poll(0.1) is None and _assigned(first) == 2, what="first member assigned")
        old_metadata = first.consumer_group_metadata()
        second.subscribe([topic])

        def split() -> bool:
            first.poll(0.1)
            second.poll(0.1)
            return _assigned(first) == 1 and _assigned(second) == 1

        wait_until(split, what="partitions split")
        producer = transactional_producer(broker, unique("generation-txn"))
        producer.begin_transaction()
        offsets = [TopicPartition(topic, 0, 1)]
        try:
            producer.send_offsets_to_transaction(offsets, old_metadata, 30)
            stale: ClientError | None = None
        except KafkaException as exc:
            stale = ClientError.of(exc)
        producer.abort_transaction(30)
        producer.begin_transaction()
        producer.send_offsets_to_transaction(offsets, first.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        return {"stale_generation": stale, "after": _fetch_settled(broker, group, topic)}
    finally:
        second.close()
        first.close()


def test_offsets_with_the_group_metadata_of_an_older_generation_are_refused(brokers: Brokers) -> None:
    observed = brokers.observe(_stale_generation)
    assert observed["embedded"] == observed["apache-kafka"]
    assert observed["apache-kafka"] == {
        # A zombie's offsets are refused; the transaction can be aborted and retried (not fatal).
        "stale_generation": ClientError("ILLEGAL_GENERATION", fatal=False, retriable=False, txn_requires_abort=True),
        "after": (1, "none"),
    }
