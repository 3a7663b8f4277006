"""Kafka's transactional copy test (``TransactionalMessageCopier``) across broker ``kill -9``s.

The pattern of Kafka's ``transactions_test.py``: N messages in an input partition, a copier that
consumes them, produces them to an output topic and commits the consumed offsets in the same
transaction (``sendOffsetsToTransaction`` with the consumer's group metadata). The broker is
``kill -9``ed and restarted while the copier runs; a copier that dies with it is started again
with the same transactional id, which fences its predecessor and resumes from the committed
offset. At the end, read_committed sees every input message in the output exactly once.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from onceflow.broker.embedded import BrokerProcess
from onceflow.testing.broker.clients import create_topic, produce_acked, read_topic
from onceflow.testing.broker.fixtures import ApacheKafkaFactory, BrokerFactory
from onceflow.testing.broker.kafka_tools import TRANSACTIONAL_MESSAGE_COPIER, ToolProcess

MESSAGES = 20_000
KILLS_AT = (4_000, 9_000, 14_000)
"""Kill the broker once the running copier has reported this many messages copied."""
DEADLINE = 240.0


def _copier(broker: BrokerProcess, name: str, log: Path) -> ToolProcess:
    return ToolProcess(
        TRANSACTIONAL_MESSAGE_COPIER,
        "--broker-list",
        broker.bootstrap_servers,
        "--input-topic",
        f"copy-in-{name}",
        "--input-partition",
        "0",
        "--output-topic",
        f"copy-out-{name}",
        "--max-messages",
        "-1",
        "--transaction-size",
        "500",
        "--transaction-timeout",
        "20000",
        "--transactional-id",
        f"copier-{name}",
        "--consumer-group",
        f"copier-group-{name}",
        "--use-group-metadata",
        stderr_path=log,
    )


def _processed(copier: ToolProcess) -> int:
    return max((int(event.get("totalProcessed", 0)) for event in copier.events()), default=0)


def _copy_with_kills(broker: BrokerProcess, name: str, log: Path) -> int:
    """Run copiers until one finishes the input, killing the broker at :data:`KILLS_AT`; returns
    how many copiers it took."""
    kills = list(KILLS_AT)
    copiers = 0
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        copiers += 1
        with _copier(broker, name, log) as copier:
            while copier.poll() is None and time.monotonic() < deadline:
                # The output before this copier started counts: a restarted copier resumes from the
                # committed offset, so its own totals start again at zero.
                if kills and _processed(copier) + (MESSAGES - _remaining_at_start(copier)) >= kills[0]:
                    kills.pop(0)
                    broker.kill()
                    time.sleep(1.0)
                    broker.start()
                time.sleep(0.05)
            if copier.poll() is None:
                break
            copier.wait(10)
            finished = any(event.get("stage") == "ShutdownComplete" for event in copier.events())
            if copier.poll() == 0 and finished and not kills:
                return copiers
    raise AssertionError(f"the copy did not finish within {DEADLINE}s (copier {copiers}); stderr in {log}")


def _remaining_at_start(copier: ToolProcess) -> int:
    events = copier.events()
    return int(events[0].get("remaining", MESSAGES)) if events else MESSAGES


def _run(broker: BrokerProcess, name: str, log: Path) -> None:
    create_topic(broker.bootstrap_servers, f"copy-in-{name}")
    create_topic(broker.bootstrap_servers, f"copy-out-{name}", partitions=3)
    values = [f"message-{i:06d}".encode() for i in range(MESSAGES)]
    produce_acked(broker.bootstrap_servers, f"copy-in-{name}", values, partition=0)

    copiers = _copy_with_kills(broker, name, log)

    copied = Counter(record.value for record in read_topic(broker.bootstrap_servers, f"copy-out-{name}"))
    duplicates = {value: count for value, count in copied.items() if count > 1}
    missing = set(values) - set(copied)
    assert not duplicates, f"{len(duplicates)} messages copied twice, e.g. {list(duplicates)[:3]}"
    assert not missing, f"{len(missing)} messages never copied, e.g. {sorted(missing)[:3]}"
    assert set(copied) == set(values)
    assert copiers >= 1


@pytest.mark.slow
def test_copier_is_exactly_once_across_embedded_broker_kills(
    broker_factory: BrokerFactory, name: str, tmp_path: Path
) -> None:
    broker = broker_factory()
    _run(broker, name, tmp_path / "copier.stderr")


@pytest.mark.slow
def test_copier_is_exactly_once_across_apache_kafka_kills(
    apache_kafka_factory: ApacheKafkaFactory, name: str, tmp_path: Path
) -> None:
    kafka = apache_kafka_factory()
    _run(kafka, name, tmp_path / "copier.stderr")
