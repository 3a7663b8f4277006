"""Acknowledged writes survive kill -9 of the broker, exactly once and in order, including kills
in the middle of produce and a torn segment tail."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.clients import create_topic, produce_acked, read_topic
from onceflow.testing.broker.fixtures import BrokerFactory


def assert_log_holds_exactly(bootstrap: str, topic: str, acked: list[tuple[int, int, bytes]]) -> None:
    """Each partition holds exactly the acked values, at their acked offsets, in order, once."""
    records = read_topic(bootstrap, topic, isolation_level="read_uncommitted")
    by_partition: dict[int, list[tuple[int, bytes | None]]] = defaultdict(list)
    for record in records:
        by_partition[record.partition].append((record.offset, record.value))
    expected: dict[int, list[tuple[int, bytes | None]]] = defaultdict(list)
    for partition, offset, value in sorted(acked):
        expected[partition].append((offset, value))
    assert dict(by_partition) == dict(expected)


def test_100k_acked_records_survive_kill_9(tmp_path: Path, broker_factory: BrokerFactory) -> None:
    broker = broker_factory(tmp_path / "broker")
    create_topic(broker.bootstrap_servers, "events", partitions=3)
    acked = produce_acked(
        broker.bootstrap_servers, "events", (b"%08d" % i for i in range(100_000)), config={"linger.ms": 5}
    )
    assert len(acked) == 100_000
    broker.kill()
    broker.start()
    assert_log_holds_exactly(broker.bootstrap_servers, "events", acked)


@pytest.mark.slow
def test_kills_during_produce_lose_and_duplicate_nothing(tmp_path: Path, broker_factory: BrokerFactory) -> None:
    broker = broker_factory(tmp_path / "broker")
    create_topic(broker.bootstrap_servers, "events", partitions=3)
    kills = 0
    stop = threading.Event()

    def killer(instance: EmbeddedBroker) -> None:
        nonlocal kills
        while not stop.wait(1.5):
            instance.kill()
            kills += 1
            time.sleep(0.3)
            instance.start()

    thread = threading.Thread(target=killer, args=(broker,), daemon=True)
    thread.start()
    try:
        acked = produce_acked(
            broker.bootstrap_servers,
            "events",
            (b"%08d" % i for i in range(150_000)),
            config={"linger.ms": 5, "message.timeout.ms": 120_000, "queue.buffering.max.messages": 20_000},
            timeout=180,
        )
        while kills < 3:
            time.sleep(0.2)
    finally:
        stop.set()
        thread.join()
    assert len(acked) == 150_000
    broker.kill()
    broker.start()
    assert_log_holds_exactly(broker.bootstrap_servers, "events", acked)
    # Per partition, values were produced in increasing order: the log keeps that order.
    for partition in range(3):
        values = [v for p, _, v in sorted(acked) if p == partition]
        assert values == sorted(values)


def test_torn_segment_tail_is_truncated_and_appends_continue(tmp_path: Path, broker_factory: BrokerFactory) -> None:
    data_dir = tmp_path / "broker"
    broker = broker_factory(data_dir)
    create_topic(broker.bootstrap_servers, "events", partitions=1)
    acked = produce_acked(broker.bootstrap_servers, "events", (b"%08d" % i for i in range(10_000)))
    broker.kill()
    segments = sorted(data_dir.rglob("events-0/*.log"))
    assert segments, f"no segment files under {data_dir}"
    with segments[-1].open("ab") as tail:
        # Half a batch header followed by junk: what a crash in the middle of a write leaves.
        tail.write(b"\x00\x00\x00\x00\x00\x00\x27\x10\x00\x00\x01\x00" + b"\xab" * 300)
    broker.start()
    assert_log_holds_exactly(broker.bootstrap_servers, "events", acked)
    more = produce_acked(broker.bootstrap_servers, "events", (b"more-%d" % i for i in range(100)))
    assert [offset for _, offset, _ in more] == list(range(10_000, 10_100))
    assert "torn" in broker.log_tail(200).lower() or "truncat" in broker.log_tail(200).lower()
