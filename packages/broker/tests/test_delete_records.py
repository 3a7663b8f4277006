"""DeleteRecords on a real broker process: the log start offset moves, durably, and nothing below it
is served again (``AdminClient.delete_records``, as ``kafka-delete-records`` and Kafka Streams use it)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.clients import create_topic, produce_acked

TOPIC = "deletable"


def _delete(bootstrap: str, offset: int) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(TOPIC, 0, offset)], request_timeout=30)
    (result,) = futures.values()
    return int(result.result(30).low_watermark)


def _low(bootstrap: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"low-{uuid.uuid4()}"})
    try:
        low, _ = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30, cached=False)
        return int(low)
    finally:
        consumer.close()


def _values_from_earliest(bootstrap: str, expected: int) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4()}", "auto.offset.reset": "earliest"}
    )
    consumer.assign([TopicPartition(TOPIC, 0, -2)])  # OFFSET_BEGINNING
    values: list[bytes] = []
    try:
        for _ in range(100):
            for message in consumer.consume(100, timeout=0.3):
                if message.error() is None:
                    values.append(message.value() or b"")
            if len(values) >= expected:
                break
    finally:
        consumer.close()
    return values


def test_records_below_the_new_log_start_are_gone_for_good(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, TOPIC, 1, {"segment.bytes": "2048"})  # several segments: whole ones are deleted
    produce_acked(bootstrap, TOPIC, [b"v%03d" % i for i in range(60)], partition=0, config={"batch.num.messages": 1})
    assert _delete(bootstrap, 25) == 25
    assert _low(bootstrap) == 25
    assert _values_from_earliest(bootstrap, 35) == [b"v%03d" % i for i in range(25, 60)]
    # an earlier offset changes nothing; the new start survives a restart and a kill -9
    assert _delete(bootstrap, 10) == 25
    broker.stop()
    broker.start()
    assert _low(bootstrap) == 25
    broker.kill()
    broker.start()
    assert _low(bootstrap) == 25
    assert _values_from_earliest(bootstrap, 35)[0] == b"v025"


def test_minus_one_deletes_up_to_the_high_watermark_and_past_it_is_out_of_range(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, TOPIC, 1)
    produce_acked(bootstrap, TOPIC, [b"x"] * 10, partition=0)
    with pytest.raises(KafkaException) as raised:
        _delete(bootstrap, 11)
    assert raised.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE
    assert _delete(bootstrap, -1) == 10
    assert _low(bootstrap) == 10
    produce_acked(bootstrap, TOPIC, [b"after"], partition=0)
    assert _values_from_earliest(bootstrap, 1) == [b"after"]
