"""Transaction timeouts: the broker aborts a transaction left open past its transaction.timeout.ms,
and the last stable offset moves on; the broker's transaction.max.timeout.ms caps what producers ask."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from onceflow.testing.broker.clients import ConsumedRecord, create_topic, produce_acked, read_topic
from onceflow.testing.broker.fixtures import BrokerFactory


def test_transaction_left_open_is_aborted_after_its_timeout(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(transaction_abort_timed_out_interval_ms=200)
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "slow", partitions=1)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": "slow-writer",
            "transaction.timeout.ms": 2000,
            "linger.ms": 1,
        }
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("slow", value=b"abandoned", partition=0)
    assert producer.flush(10) == 0
    produce_acked(bootstrap, "slow", [b"plain"], partition=0)
    assert read_topic(bootstrap, "slow", idle_timeout=0.3) == []

    deadline = time.monotonic() + 15
    records: list[ConsumedRecord] = []
    while time.monotonic() < deadline and not records:
        records = read_topic(bootstrap, "slow", idle_timeout=0.3)
    assert [r.value for r in records] == [b"plain"]

    with pytest.raises(KafkaException) as late_commit:
        producer.commit_transaction(10)
    assert late_commit.value.args[0].code() in {
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    }
    assert [r.value for r in read_topic(bootstrap, "slow", isolation_level="read_uncommitted")] == [
        b"abandoned",
        b"plain",
    ]


def test_timeout_above_the_broker_maximum_is_refused(broker_factory: BrokerFactory) -> None:
    broker = broker_factory(transaction_max_timeout_ms=5000)
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.BROKER, "0")
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["transaction.max.timeout.ms"].value == "5000"

    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "greedy", "transaction.timeout.ms": 60_000}
    )
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(10)
    assert refused.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT
