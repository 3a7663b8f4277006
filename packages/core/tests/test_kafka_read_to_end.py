"""The one read-to-end (``onceflow.core.kafka.read_to_end``) against a real broker.

Its cut is the end offsets captured at the start: the last stable offset skips an open transaction,
the high watermark waits for it to end; records produced after the start are not returned; a
missing topic is ``TopicNotFound``; a broker restart while the end offsets are asked is waited for.
"""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Producer

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.kafka import (
    TopicNotFound,
    TopicSpec,
    Until,
    end_offsets,
    ensure_topics,
    produce,
    read_to_end,
    transactional_producer_config,
)


def _committed(bootstrap: str, topic: str, values: list[bytes], txn_id: str) -> Producer:
    producer = Producer(transactional_producer_config({"bootstrap.servers": bootstrap}, txn_id))
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in values:
        produce(producer, topic, value=value, partition=0)
    producer.commit_transaction(30)
    return producer


def _values(bootstrap: str, topic: str, *, until: Until, timeout: float = 120.0) -> list[bytes | None]:
    return [r.value for r in read_to_end({"bootstrap.servers": bootstrap}, topic, until=until, timeout=timeout)]


def test_the_last_stable_cut_skips_an_open_transaction_and_the_high_watermark_waits_for_it(
    broker: EmbeddedBroker,
) -> None:
    bootstrap = broker.bootstrap_servers
    ensure_topics({"bootstrap.servers": bootstrap}, [TopicSpec("rte", 2)])
    _committed(bootstrap, "rte", [b"a", b"b"], "rte-first")
    assert _values(bootstrap, "rte", until="last_stable") == [b"a", b"b"]
    # a transaction left open: the last stable offset stops before it
    open_txn = Producer(transactional_producer_config({"bootstrap.servers": bootstrap}, "rte-open"))
    open_txn.init_transactions(30)
    open_txn.begin_transaction()
    produce(open_txn, "rte", value=b"late", partition=0)
    open_txn.flush(30)
    assert _values(bootstrap, "rte", until="last_stable", timeout=10) == [b"a", b"b"]
    # the high watermark includes it: the read waits until it commits, then returns it
    committer = threading.Timer(1.5, lambda: open_txn.commit_transaction(30))
    committer.start()
    started = time.monotonic()
    assert _values(bootstrap, "rte", until="high_watermark", timeout=30) == [b"a", b"b", b"late"]
    committer.join()
    assert time.monotonic() - started >= 1.0, "the transaction was committed before the read: it proves nothing"


def test_records_produced_after_the_start_are_not_part_of_the_cut(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    ensure_topics({"bootstrap.servers": bootstrap}, [TopicSpec("rte-cut")])
    producer = _committed(bootstrap, "rte-cut", [b"1", b"2", b"3"], "rte-cut")
    records = read_to_end({"bootstrap.servers": bootstrap}, "rte-cut", until="last_stable")
    first = next(records)
    producer.begin_transaction()
    produce(producer, "rte-cut", value=b"4", partition=0)
    producer.commit_transaction(30)
    assert [first.value, *(r.value for r in records)] == [b"1", b"2", b"3"]
    assert [r.offset for r in read_to_end({"bootstrap.servers": bootstrap}, "rte-cut", until="last_stable")] == [
        0,
        1,
        2,
        4,
    ]


def test_a_missing_topic_is_topic_not_found(broker: EmbeddedBroker) -> None:
    with pytest.raises(TopicNotFound, match="no-such-topic"):
        _values(broker.bootstrap_servers, "no-such-topic", until="last_stable", timeout=10)


def test_the_end_offsets_wait_through_a_broker_restart(broker: EmbeddedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    ensure_topics({"bootstrap.servers": bootstrap}, [TopicSpec("rte-restart", 3)])
    _committed(bootstrap, "rte-restart", [b"x"], "rte-restart").flush(10)
    broker.kill()
    restarter = threading.Timer(1.0, broker.start)
    restarter.start()
    try:
        started = time.monotonic()
        assert end_offsets({"bootstrap.servers": bootstrap}, "rte-restart") == {0: 2, 1: 0, 2: 0}
        assert time.monotonic() - started >= 0.5, "the broker was back before the query: it proves nothing"
        assert _values(bootstrap, "rte-restart", until="last_stable") == [b"x"]
    finally:
        restarter.join()
