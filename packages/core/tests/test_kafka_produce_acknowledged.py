"""``produce_acknowledged`` against a real broker: every record lands before it returns, and a record
the broker refuses raises with the broker's code, naming the topic and the record's key."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.kafka import TopicSpec, ensure_topics, produce_acknowledged, read_to_end


def test_records_land_and_a_refused_one_raises_naming_topic_and_key(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    # The topic takes record batches of at most 1 KiB: the broker refuses a larger record.
    ensure_topics({"bootstrap.servers": bootstrap}, [TopicSpec("small", 1, {"max.message.bytes": "1024"})])
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    produce_acknowledged(producer, "small", [{"key": f"k{i}".encode(), "value": b"v"} for i in range(3)])
    with pytest.raises(KafkaException) as refused:
        produce_acknowledged(producer, "small", [{"key": b"huge", "value": b"x" * 4096}])
    error = refused.value.args[0]
    assert error.code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert "small" in error.str() and "'huge'" in error.str()
    landed = [r.key for r in read_to_end({"bootstrap.servers": bootstrap}, "small", until="high_watermark", timeout=30)]
    assert landed == [b"k0", b"k1", b"k2"]
