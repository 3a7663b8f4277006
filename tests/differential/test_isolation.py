"""Records and offsets under each isolation level, control-record gaps, the high watermark and the
last stable offset: the same on the embedded broker and on Apache Kafka."""

from __future__ import annotations

from typing import Any

from onceflow.testing.broker.clients import produce_acked

from .observe import (
    Brokers,
    BrokerUnderTest,
    end_offsets,
    new_topic,
    produce,
    records,
    settle,
    transactional_producer,
    unique,
)


def _committed_aborted_committed(broker: BrokerUnderTest) -> dict[str, Any]:
    topic = new_topic(broker, "isolation")
    producer = transactional_producer(broker, unique("isolation-txn"))
    producer.begin_transaction()
    produce(producer, topic, b"c1", b"c2", b"c3")
    producer.commit_transaction(30)
    producer.begin_transaction()
    produce(producer, topic, b"a1", b"a2")
    producer.abort_transaction(30)
    producer.begin_transaction()
    produce(producer, topic, b"c4")
    producer.commit_transaction(30)
    settle(broker, topic)
    return {
        "read_uncommitted": records(broker, topic, "read_uncommitted"),
        "read_committed": records(broker, topic, "read_committed"),
        "end_offsets": end_offsets(broker, topic),
    }


def test_control_records_take_offsets_and_aborted_records_are_hidden(brokers: Brokers) -> None:
    observed = brokers.observe(_committed_aborted_committed)
    assert observed["embedded"] == observed["apache-kafka"]
    assert observed["apache-kafka"] == {
        # Markers at 3 (commit), 6 (abort) and 8 (commit) are never returned but take their offsets.
        "read_uncommitted": [(0, b"c1"), (1, b"c2"), (2, b"c3"), (4, b"a1"), (5, b"a2"), (7, b"c4")],
        "read_committed": [(0, b"c1"), (1, b"c2"), (2, b"c3"), (7, b"c4")],
        "end_offsets": {"high_watermark": 9, "lso": 9},
    }


def _open_transaction_holds_the_lso(broker: BrokerUnderTest) -> dict[str, Any]:
    topic = new_topic(broker, "lso")
    produce_acked(broker.bootstrap_servers, topic, [b"p1", b"p2"], partition=0)
    producer = transactional_producer(broker, unique("lso-txn"))
    producer.begin_transaction()
    produce(producer, topic, b"t1", b"t2")
    produce_acked(broker.bootstrap_servers, topic, [b"p3"], partition=0)
    during = {
        "end_offsets": end_offsets(broker, topic),
        "read_committed": records(broker, topic, "read_committed"),
        "read_uncommitted": records(broker, topic, "read_uncommitted"),
    }
    producer.commit_transaction(30)
    settle(broker, topic)
    after = {"end_offsets": end_offsets(broker, topic), "read_committed": records(broker, topic, "read_committed")}
    return {"during": during, "after": after}


def test_an_open_transaction_holds_the_last_stable_offset(brokers: Brokers) -> None:
    observed = brokers.observe(_open_transaction_holds_the_lso)
    assert observed["embedded"] == observed["apache-kafka"]
    assert observed["apache-kafka"] == {
        "during": {
            "end_offsets": {"high_watermark": 5, "lso": 2},
            "read_committed": [(0, b"p1"), (1, b"p2")],
            "read_uncommitted": [(0, b"p1"), (1, b"p2"), (2, b"t1"), (3, b"t2"), (4, b"p3")],
        },
        "after": {
            "end_offsets": {"high_watermark": 6, "lso": 6},
            "read_committed": [(0, b"p1"), (1, b"p2"), (2, b"t1"), (3, b"t2"), (4, b"p3")],
        },
    }


def _kafka_python_reads(broker: BrokerUnderTest) -> dict[str, Any]:
    """The committed/aborted/committed topic read by kafka-python, a client with its own read_committed
    implementation (aborted transactions list, control batches skipped in Python)."""
    from kafka import KafkaConsumer, TopicPartition

    topic = new_topic(broker, "kafka-python")
    producer = transactional_producer(broker, unique("kafka-python-txn"))
    for values, commit in (((b"c1", b"c2"), True), ((b"a1",), False), ((b"c3",), True)):
        producer.begin_transaction()
        produce(producer, topic, *values)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    settle(broker, topic)
    observed: dict[str, Any] = {}
    for level in ("read_uncommitted", "read_committed"):
        consumer = KafkaConsumer(
            bootstrap_servers=broker.bootstrap_servers,
            isolation_level=level,
            enable_auto_commit=False,
            consumer_timeout_ms=1500,
        )
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        read: list[tuple[int, bytes]] = []
        for message in consumer:
            read.append((message.offset, message.value))
            if consumer.position(partition) >= consumer.end_offsets([partition])[partition]:
                break
        observed[level] = read
        observed[f"{level}_position"] = consumer.position(partition)
        consumer.close()
    return observed


def test_kafka_python_sees_the_same_records_and_positions(brokers: Brokers) -> None:
    observed = brokers.observe(_kafka_python_reads)
    assert observed["embedded"] == observed["apache-kafka"]
    assert observed["apache-kafka"] == {
        "read_uncommitted": [(0, b"c1"), (1, b"c2"), (3, b"a1"), (5, b"c3")],
        "read_uncommitted_position": 7,
        "read_committed": [(0, b"c1"), (1, b"c2"), (5, b"c3")],
        "read_committed_position": 7,
    }
