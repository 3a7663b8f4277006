"""DeleteRecords on both brokers: the low watermark, what a consumer from the beginning reads, and the
answer to an offset past the end must be the same."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from .observe import Brokers, BrokerUnderTest, ClientError, new_topic, records


def _delete(broker: BrokerUnderTest, topic: str, offset: int) -> int | str:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    (future,) = admin.delete_records([TopicPartition(topic, 0, offset)], request_timeout=30).values()
    try:
        return int(future.result(30).low_watermark)
    except KafkaException as exc:
        return ClientError.of(exc).name


def _scenario(broker: BrokerUnderTest) -> dict[str, Any]:
    topic = new_topic(broker, "delete-records")
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True})
    for i in range(20):
        producer.produce(topic, value=b"r%02d" % i, partition=0)
    assert producer.flush(30) == 0
    return {
        "past_end": _delete(broker, topic, 21),
        "low_watermark": _delete(broker, topic, 7),
        "earlier_again": _delete(broker, topic, 3),
        "remaining": records(broker, topic, "read_uncommitted"),
        "to_the_end": _delete(broker, topic, -1),
        "after_all": records(broker, topic, "read_uncommitted"),
    }


def test_delete_records_moves_the_log_start_the_same_way(brokers: Brokers) -> None:
    observed = brokers.observe(_scenario)
    assert observed["embedded"] == observed["apache-kafka"]
    kafka = observed["apache-kafka"]
    assert kafka["past_end"] == "OFFSET_OUT_OF_RANGE"
    assert (kafka["low_watermark"], kafka["earlier_again"], kafka["to_the_end"]) == (7, 7, 20)
    assert kafka["remaining"] == [(i, b"r%02d" % i) for i in range(7, 20)]
    assert kafka["after_all"] == []
