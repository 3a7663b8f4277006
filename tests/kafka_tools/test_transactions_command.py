"""``kafka-transactions`` (``TransactionsCommand``) against the embedded broker and Apache Kafka.

A transaction left open by a confluent-kafka producer is what an operator meets as a hanging
transaction: ``list`` and ``describe`` show it Ongoing on its partition, ``describe-producers``
shows the offset it started at, and ``abort --topic --partition --start-offset`` (WriteTxnMarkers
with the producer's id and epoch) ends it, so read_committed readers get past it.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition

from onceflow.broker.embedded import BrokerProcess
from onceflow.testing.broker.clients import create_topic, produce_acked
from onceflow.testing.broker.kafka_tools import TRANSACTIONS_COMMAND, run_tool


def _table(broker: BrokerProcess, *args: str) -> list[dict[str, str]]:
    """Run a ``kafka-transactions`` sub-command and return its table as one dict per row."""
    result = run_tool(TRANSACTIONS_COMMAND, "--bootstrap-server", broker.bootstrap_servers, *args)
    assert result.returncode == 0, f"kafka-transactions {' '.join(args)}:\n{result.stdout}{result.stderr}"
    lines = [line for line in result.stdout.splitlines() if "\t" in line]
    header = [cell.strip() for cell in lines[0].split("\t")]
    return [dict(zip(header, (cell.strip() for cell in line.split("\t")), strict=False)) for line in lines[1:]]


def _watermarks(broker: BrokerProcess, topic: str) -> tuple[int, int]:
    """(high watermark, last stable offset) of partition 0."""
    stable = {}
    for level in ("read_uncommitted", "read_committed"):
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "w", "isolation.level": level})
        try:
            stable[level] = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
        finally:
            consumer.close()
    return stable["read_uncommitted"], stable["read_committed"]


def test_list_describe_and_abort_a_hanging_transaction(any_broker: BrokerProcess, name: str) -> None:
    broker = any_broker
    topic = f"hanging-{name}"
    transactional_id = f"hanging-{name}"
    create_topic(broker.bootstrap_servers, topic)
    produce_acked(broker.bootstrap_servers, topic, [b"before-0", b"before-1"], partition=0)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": transactional_id})
    producer.init_transactions()
    producer.begin_transaction()
    producer.produce(topic, b"hanging", partition=0)
    assert producer.flush(10) == 0
    assert _watermarks(broker, topic) == (3, 2)

    listed = {row["TransactionalId"]: row for row in _table(broker, "list")}
    assert listed[transactional_id]["TransactionState"] == "Ongoing"
    [described] = _table(broker, "describe", "--transactional-id", transactional_id)
    assert described["TransactionState"] == "Ongoing"
    assert described["TopicPartitions"] == f"{topic}-0"
    assert described["ProducerId"] == listed[transactional_id]["ProducerId"]
    producers = {
        row["ProducerId"]: row for row in _table(broker, "describe-producers", "--topic", topic, "--partition", "0")
    }
    assert producers[described["ProducerId"]]["CurrentTransactionStartOffset"] == "2"

    aborted = run_tool(
        TRANSACTIONS_COMMAND,
        *("--bootstrap-server", broker.bootstrap_servers, "abort"),
        *("--topic", topic, "--partition", "0", "--start-offset", "2"),
    )
    assert aborted.returncode == 0, aborted.stdout + aborted.stderr

    deadline = time.monotonic() + 10
    while _watermarks(broker, topic) != (4, 4):  # the ABORT marker took offset 3
        assert time.monotonic() < deadline, f"the abort did not end the transaction: {_watermarks(broker, topic)}"
        time.sleep(0.1)
    after = _table(broker, "describe-producers", "--topic", topic, "--partition", "0")
    assert {row["CurrentTransactionStartOffset"] for row in after} == {"None"}  # the tool prints no offset so
