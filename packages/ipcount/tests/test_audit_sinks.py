"""The audit's view of a Kafka sink topic: the latest IpCount per key, and records that are not
IpCounts counted as unreadable rather than stopping the audit."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.errors import SerializationError
from onceflow.core.settings import KafkaSettings
from onceflow.core.topics import SINK_COMMITS_TOPIC
from onceflow.ipcount.audit import KafkaTopicReader
from onceflow.ipcount.schema import ip_count_topic_binding
from onceflow.sinks.readback import KafkaReader
from onceflow.testing.consumer.ip_counts import W0, Transaction, TransactionalWriter, ip_count


def test_undecodable_records_are_counted_and_the_latest_record_per_key_wins(
    broker: EmbeddedBroker, make_topic: Callable[..., str]
) -> None:
    topic = make_topic()
    writer = TransactionalWriter(broker.bootstrap_servers, topic)
    writer.write_values([b"\xc3\x01garbage", b"{not avro}"])
    writer.write(Transaction([ip_count(W0, "10.0.0.1", 1), ip_count(W0, "10.0.0.2", 5)]))
    writer.write(Transaction([ip_count(W0, "10.0.0.1", 3)]))
    kafka = KafkaSettings(bootstrap_servers=broker.bootstrap_servers)

    rows = KafkaTopicReader("kafka", kafka, topic, timeout=30).read()
    assert rows.unreadable == 2
    assert rows.rows == {(W0, "10.0.0.1"): [3], (W0, "10.0.0.2"): [5]}

    # Without a callback the read-back API refuses the topic, naming what is wrong.
    reader = KafkaReader("kafka", kafka, topic, SINK_COMMITS_TOPIC, timeout_s=30)
    with pytest.raises(SerializationError, match="single-object"):
        reader.rows(ip_count_topic_binding("kafka", topic))
