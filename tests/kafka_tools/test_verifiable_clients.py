"""Kafka's ``VerifiableProducer`` and ``VerifiableConsumer`` across a ``kill -9`` of the embedded broker.

The producer (acks=all, idempotent) and a consumer group member run together; the broker is killed
and restarted in the middle. Every acknowledged record is consumed at the offset it was acked with,
no value is in the log twice (the idempotent retries after the restart were deduplicated), and the
consumer saw nothing that was not sent.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from onceflow.testing.broker.clients import create_topic
from onceflow.testing.broker.fixtures import BrokerFactory
from onceflow.testing.broker.kafka_tools import VERIFIABLE_CONSUMER, VERIFIABLE_PRODUCER, ToolProcess

MESSAGES = 6_000
THROUGHPUT = 1_500
"""Records per second: the producer runs for about four seconds, so the kill lands in the middle."""
KILL_AFTER_ACKED = 2_000


def _wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def test_acked_records_are_consumed_exactly_at_their_offsets_across_a_kill(
    broker_factory: BrokerFactory, name: str, tmp_path: Path
) -> None:
    broker = broker_factory()
    topic = f"verifiable-{name}"
    create_topic(broker.bootstrap_servers, topic, partitions=3)
    config = tmp_path / "producer.properties"
    config.write_text("enable.idempotence=true\nretries=2147483647\ndelivery.timeout.ms=120000\n")

    producer = ToolProcess(
        VERIFIABLE_PRODUCER,
        *("--bootstrap-server", broker.bootstrap_servers, "--topic", topic),
        *("--max-messages", str(MESSAGES), "--throughput", str(THROUGHPUT), "--acks", "-1"),
        *("--command-config", str(config)),
        stderr_path=tmp_path / "producer.stderr",
    )
    consumer = ToolProcess(
        VERIFIABLE_CONSUMER,
        *("--bootstrap-server", broker.bootstrap_servers, "--topic", topic, "--group-id", f"verifiable-{name}"),
        *("--verbose", "--reset-policy", "earliest"),
        stderr_path=tmp_path / "consumer.stderr",
    )
    with producer, consumer:

        def acked() -> list[dict[str, object]]:
            return [e for e in producer.events() if e.get("name") == "producer_send_success"]

        _wait_until(lambda: len(acked()) >= KILL_AFTER_ACKED, 60, f"{KILL_AFTER_ACKED} acks")
        broker.kill()
        time.sleep(1.0)
        broker.start()
        assert producer.wait(120) == 0, producer.stderr_tail()
        events = producer.events()
        summary = next(e for e in events if e.get("name") == "tool_data")
        assert summary["sent"] == MESSAGES
        acks = {(str(e["value"]), int(str(e["partition"])), int(str(e["offset"]))) for e in acked()}
        assert len(acks) == summary["acked"]
        acked_values = {value for value, _, _ in acks}

        def consumed() -> list[tuple[str, int, int]]:
            return [
                (str(e["value"]), int(str(e["partition"])), int(str(e["offset"])))
                for e in consumer.events()
                if e.get("name") == "record_data"
            ]

        _wait_until(lambda: acked_values <= {value for value, _, _ in consumed()}, 60, "the consumer to see every ack")

    records = set(consumed())
    missing = acks - records
    assert not missing, f"{len(missing)} acked records not consumed at their offsets, e.g. {sorted(missing)[:3]}"
    copies = Counter(value for value, _, _ in records)
    assert not [value for value, count in copies.items() if count > 1], "a value is in the log twice"
    assert {value for value, _, _ in records} <= {str(i) for i in range(MESSAGES)}
    # The consumer may read a record twice (a restart before its commit), but always at one offset.
    assert len({(partition, offset) for _, partition, offset in records}) == len(records)
