"""``kafka-consumer-groups``, ``kafka-console-consumer``, ``kafka-producer-perf-test`` and
``kafka-configs`` against the embedded broker: the answers an operator reads are the ones Apache
Kafka would give."""

from __future__ import annotations

import re
import time

from confluent_kafka import Consumer, Message, Producer

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.clients import create_topic, produce_acked, read_topic
from onceflow.testing.broker.kafka_tools import (
    CONFIG_COMMAND,
    CONSOLE_CONSUMER,
    CONSUMER_GROUP_COMMAND,
    PRODUCER_PERFORMANCE,
    run_tool,
)


def test_consumer_groups_describes_an_active_member_and_deletes_the_empty_group(
    broker: EmbeddedBroker, name: str
) -> None:
    topic, group = f"groups-{name}", f"groups-{name}"
    create_topic(broker.bootstrap_servers, topic)
    produce_acked(broker.bootstrap_servers, topic, [b"%d" % i for i in range(100)], partition=0)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": group,
            "client.id": f"member-{name}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        seen: list[Message] = []
        deadline = time.monotonic() + 30
        while len(seen) < 60 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen.append(message)
        consumer.commit(message=seen[59], asynchronous=False)

        listed = run_tool(CONSUMER_GROUP_COMMAND, "--bootstrap-server", broker.bootstrap_servers, "--list")
        assert listed.returncode == 0, listed.stderr
        assert group in listed.stdout.split()

        described = run_tool(
            CONSUMER_GROUP_COMMAND, "--bootstrap-server", broker.bootstrap_servers, "--describe", "--group", group
        )
        assert described.returncode == 0, described.stdout + described.stderr
        [row] = [line.split() for line in described.stdout.splitlines() if line.startswith(group)]
        assert row[:6] == [group, topic, "0", "60", "100", "40"]
        assert row[6].startswith(f"member-{name}-")  # CONSUMER-ID: the client id plus a uuid
        assert row[7] == "/127.0.0.1"
        assert row[8] == f"member-{name}"

        state = run_tool(
            CONSUMER_GROUP_COMMAND,
            *("--bootstrap-server", broker.bootstrap_servers, "--describe", "--group", group, "--state"),
        )
        assert state.returncode == 0, state.stderr
        assert re.search(rf"^{group}\s+\S+\s+\(0\)\s+range\s+Stable\s+1\s*$", state.stdout, re.MULTILINE), state.stdout

        refused = run_tool(
            CONSUMER_GROUP_COMMAND, "--bootstrap-server", broker.bootstrap_servers, "--delete", "--group", group
        )
        assert "GroupNotEmptyException: The group is not empty." in refused.stdout + refused.stderr, refused.stdout
    finally:
        consumer.close()

    deleted = run_tool(
        CONSUMER_GROUP_COMMAND, "--bootstrap-server", broker.bootstrap_servers, "--delete", "--group", group
    )
    assert f"Deletion of requested consumer groups ('{group}') was successful." in deleted.stdout, deleted.stdout
    listed = run_tool(CONSUMER_GROUP_COMMAND, "--bootstrap-server", broker.bootstrap_servers, "--list")
    assert group not in listed.stdout.split()


def test_console_consumer_reads_committed_transactions_only(broker: EmbeddedBroker, name: str) -> None:
    topic = f"console-{name}"
    create_topic(broker.bootstrap_servers, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"console-{name}"})
    producer.init_transactions()
    for values, commit in ((["a", "b"], True), (["aborted-1", "aborted-2"], False), (["c"], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value.encode(), partition=0)
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()

    result = run_tool(
        CONSOLE_CONSUMER,
        *("--bootstrap-server", broker.bootstrap_servers, "--topic", topic),
        *("--isolation-level", "read_committed", "--from-beginning", "--max-messages", "3"),
        *("--timeout-ms", "30000"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == ["a", "b", "c"]
    assert "Processed a total of 3 messages" in result.stderr


def test_producer_performance_plain_and_transactional(broker: EmbeddedBroker, name: str) -> None:
    for mode, extra in (("plain", ()), ("transactional", ("--transactional-id", f"perf-{name}"))):
        topic = f"perf-{mode}-{name}"
        create_topic(broker.bootstrap_servers, topic)
        result = run_tool(
            PRODUCER_PERFORMANCE,
            *("--topic", topic, "--num-records", "2000", "--record-size", "100", "--throughput", "-1"),
            *("--command-property", f"bootstrap.servers={broker.bootstrap_servers}", "acks=all"),
            *extra,
            *(("--transaction-duration-ms", "100") if extra else ()),
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert re.search(r"^2000 records sent", result.stdout, re.MULTILINE), result.stdout
        assert len(read_topic(broker.bootstrap_servers, topic, idle_timeout=0.5)) == 2000


def test_kafka_configs_alters_and_describes_topic_configs(broker: EmbeddedBroker, name: str) -> None:
    topic = f"configs-{name}"
    create_topic(broker.bootstrap_servers, topic)

    def configs(*args: str) -> str:
        result = run_tool(CONFIG_COMMAND, "--bootstrap-server", broker.bootstrap_servers, *args)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    entity = ("--entity-type", "topics", "--entity-name", topic)
    added = configs("--alter", *entity, "--add-config", "retention.ms=1000,cleanup.policy=[delete,compact]")
    assert f"Completed updating config for topic {topic}." in added
    described = configs("--describe", *entity)
    assert "  cleanup.policy=compact,delete sensitive=false synonyms={}" in described.splitlines()
    assert "  retention.ms=1000 sensitive=false synonyms={}" in described.splitlines()
    configs("--alter", *entity, "--delete-config", "retention.ms")
    assert "retention.ms" not in configs("--describe", *entity)
