"""Durability across restarts: topics, acknowledged records, committed offsets and producer ids."""

from __future__ import annotations

import datetime
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.init_producer_id.v4 import InitProducerIdRequest
from kio.static.primitive import i32Timedelta

from onceflow.testing.broker.fixtures import BrokerFactory
from onceflow.testing.broker.wire import WireClient


def _producer_id(bootstrap: str) -> int:
    with WireClient(bootstrap) as client:
        response = client.request(
            InitProducerIdRequest(
                transactional_id=None, transaction_timeout=i32Timedelta.parse(datetime.timedelta(seconds=60))
            )
        )
    return int(response.producer_id)


def test_kill_9_keeps_acked_data_topics_offsets_and_never_reuses_producer_ids(
    broker_factory: BrokerFactory, tmp_path: Path
) -> None:
    instance = broker_factory(data_dir=tmp_path / "data")
    bootstrap = instance.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("durable", 2, 1)])["durable"].result(10)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    values = [f"d{i}".encode() for i in range(50)]
    for value in values:
        producer.produce("durable", value=value)
    assert producer.flush(15) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "durable-g", "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition("durable", 0, 7)], asynchronous=False)
    consumer.close()
    ids_before = {_producer_id(bootstrap) for _ in range(3)}
    port, pid = instance.port, instance.pid

    instance.kill()
    instance.start()
    assert instance.port == port and instance.pid != pid

    ids_after = {_producer_id(bootstrap) for _ in range(3)}
    assert not ids_before & ids_after
    assert min(ids_after) > max(ids_before)
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "durable-g", "auto.offset.reset": "earliest"})
    committed = reader.committed([TopicPartition("durable", 0)], timeout=10)
    assert committed[0].offset == 7
    reader.assign([TopicPartition("durable", 0, 0), TopicPartition("durable", 1, 0)])
    seen: list[bytes] = []
    for _ in range(100):
        message = reader.poll(0.2)
        if message is not None and message.error() is None:
            seen.append(message.value() or b"")
        if len(seen) >= len(values):
            break
    reader.close()
    assert sorted(seen) == sorted(values)

    instance.stop()
    instance.start()
    assert "durable" in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    assert "broker.stopped" in instance.log_tail(200)
