"""confluent-kafka (librdkafka) against the broker: admin, idempotent produce, consume, groups."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from onceflow.broker.embedded import EmbeddedBroker

PARTITIONS = 4


def _wait(condition: Callable[[], bool], timeout: float, poll: Callable[[], None]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        poll()
        if condition():
            return
    raise AssertionError("condition not reached in time")


def _create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(10)


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    errors: list[KafkaError] = []
    for index, value in enumerate(values):
        producer.produce(
            topic,
            key=str(index).encode(),
            value=value,
            on_delivery=lambda err, _msg: None if err is None else errors.append(err),
        )
    assert producer.flush(15) == 0
    assert not errors


def _consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )


def test_admin_produce_consume(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic("cfk", 3, 1, config={"retention.ms": "3600000"})])
    futures["cfk"].result(10)
    assert "cfk" in admin.list_topics(timeout=10).topics
    resource = ConfigResource(ResourceType.TOPIC, "cfk")
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["retention.ms"].value == "3600000"

    values = [f"value-{i}".encode() for i in range(200)]
    _produce(bootstrap, "cfk", values)
    consumer = _consumer(bootstrap, "cfk-reader")
    consumer.assign([TopicPartition("cfk", p, 0) for p in range(3)])
    seen: list[bytes] = []

    def poll() -> None:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            seen.append(message.value() or b"")

    _wait(lambda: len(seen) >= len(values), 20, poll)
    consumer.close()
    assert sorted(seen) == sorted(values)
    low, high = Consumer({"bootstrap.servers": bootstrap, "group.id": "x"}).get_watermark_offsets(
        TopicPartition("cfk", 0), timeout=5
    )
    assert low == 0 and high > 0

    admin.delete_topics(["cfk"])["cfk"].result(10)
    deadline = time.monotonic() + 10
    while "cfk" in admin.list_topics(timeout=5).topics and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "cfk" not in admin.list_topics(timeout=5).topics


def test_consumer_group_splits_rebalances_and_resumes(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    _create_topic(bootstrap, "cfk-group")
    first_batch = [f"a-{i}".encode() for i in range(80)]
    _produce(bootstrap, "cfk-group", first_batch)

    members = [_consumer(bootstrap, "cfk-g"), _consumer(bootstrap, "cfk-g")]
    for member in members:
        member.subscribe(["cfk-group"])
    seen: list[bytes] = []

    def poll_all() -> None:
        for member in members:
            message = member.poll(0.1)
            if message is not None and message.error() is None:
                seen.append(message.value() or b"")

    def split() -> bool:
        sets = [{tp.partition for tp in m.assignment()} for m in members]
        return all(sets) and sets[0].isdisjoint(sets[1]) and len(sets[0] | sets[1]) == PARTITIONS

    _wait(split, 30, poll_all)
    _wait(lambda: set(seen) >= set(first_batch), 30, poll_all)
    assert set(seen) == set(first_batch)  # at least once: a rebalance may replay uncommitted records
    for member in members:
        member.commit(asynchronous=False)

    leaver, survivor = members
    leaver.close()
    members = [survivor]
    _wait(lambda: len(survivor.assignment()) == PARTITIONS, 30, poll_all)
    survivor.close()

    second_batch = [f"b-{i}".encode() for i in range(40)]
    _produce(bootstrap, "cfk-group", second_batch)
    restarted = _consumer(bootstrap, "cfk-g")
    restarted.subscribe(["cfk-group"])
    members = [restarted]
    seen.clear()
    _wait(lambda: len(seen) >= len(second_batch), 30, poll_all)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        poll_all()
    restarted.close()
    assert sorted(seen) == sorted(second_batch)
