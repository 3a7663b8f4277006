"""Consumer groups: plain and transactional (KIP-447 ``send_offsets_to_transaction``) committed
offsets, and a rebalance of two consumers in one group. The same on the embedded broker and on
Apache Kafka."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from onceflow.testing.broker.clients import produce_acked

from .observe import Brokers, BrokerUnderTest, consumer, new_topic, transactional_producer, unique

_COORDINATOR_MOVING = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
}


def _committed(group: Consumer, topic: str, timeout: float = 30.0) -> tuple[int, str | None]:
    """The group's committed offset of partition 0. A group coordinator that is moving or still loading
    answers a retriable error (Apache Kafka: NOT_COORDINATOR while it loads __consumer_offsets on a
    busy machine); librdkafka's ``committed()`` does not retry it, so ask again, as a client would."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            (tp,) = group.committed([TopicPartition(topic, 0)], timeout=timeout)
            return int(tp.offset), tp.metadata
        except KafkaException as exc:
            error = exc.args[0]
            again = error.retriable() or error.code() in _COORDINATOR_MOVING
            if not again or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _offsets(broker: BrokerUnderTest) -> dict[str, Any]:
    topic = new_topic(broker, "offsets")
    produce_acked(broker.bootstrap_servers, topic, [b"%d" % i for i in range(10)], partition=0)
    plain = consumer(broker, unique("plain-group"))
    transactional = consumer(broker, unique("txn-group"), **{"isolation.level": "read_committed"})
    try:
        observed: dict[str, Any] = {"never_committed": _committed(plain, topic)}
        plain.commit(offsets=[TopicPartition(topic, 0, 4, "first")], asynchronous=False)
        observed["plain"] = _committed(plain, topic)
        plain.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
        observed["plain_rewound"] = _committed(plain, topic)

        transactional.assign([TopicPartition(topic, 0, 0)])
        producer = transactional_producer(broker, unique("offsets-txn"))
        for offset, commit in ((7, True), (9, False)):
            producer.begin_transaction()
            producer.send_offsets_to_transaction(
                [TopicPartition(topic, 0, offset, "txn")], transactional.consumer_group_metadata(), 30
            )
            if commit:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)
            observed[f"transactional_{'committed' if commit else 'aborted'}"] = _committed(transactional, topic)
        return observed
    finally:
        plain.close()
        transactional.close()


def test_plain_and_transactional_committed_offsets(brokers: Brokers) -> None:
    observed = brokers.observe(_offsets)
    assert observed["embedded"] == observed["apache-kafka"]
    assert observed["apache-kafka"] == {
        "never_committed": (-1001, None),
        "plain": (4, "first"),
        "plain_rewound": (2, None),
        "transactional_committed": (7, "txn"),
        "transactional_aborted": (7, "txn"),
    }


def _assigned(member: Consumer) -> list[int]:
    return sorted(tp.partition for tp in member.assignment())


def _poll_until(members: list[Consumer], done: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"group did not settle: {[_assigned(m) for m in members]}"
        for member in members:
            member.poll(0.1)


def _rebalance(broker: BrokerUnderTest) -> dict[str, Any]:
    topic, group = new_topic(broker, "rebalance", partitions=2), unique("rebalance-group")
    first, second = consumer(broker, group), consumer(broker, group)
    try:
        first.subscribe([topic])
        _poll_until([first], lambda: len(_assigned(first)) == 2)
        alone = _assigned(first)
        second.subscribe([topic])
        _poll_until([first, second], lambda: len(_assigned(first)) == 1 and len(_assigned(second)) == 1)
        split = sorted([_assigned(first), _assigned(second)])
        second.close()
        _poll_until([first], lambda: len(_assigned(first)) == 2)
        return {"alone": alone, "split": split, "after_leave": _assigned(first)}
    finally:
        first.close()


def test_two_consumers_split_the_partitions_and_one_leaving_gives_all_back(brokers: Brokers) -> None:
    observed = brokers.observe(_rebalance)
    assert observed["embedded"] == observed["apache-kafka"]
    assert observed["apache-kafka"] == {"alone": [0, 1], "split": [[0], [1]], "after_leave": [0, 1]}
