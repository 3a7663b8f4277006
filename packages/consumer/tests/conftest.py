"""Shared helpers of the consumer tests: IpCount records, transactional writes to the results topic,
and the expected store contents (the latest record per key, read with read_committed)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import pytest
from confluent_kafka import Producer

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.consumer.settings import ConsumerLoopSettings
from onceflow.consumer.store import ResultsStore
from onceflow.consumer.tables import StoredTables
from onceflow.core.avro import IP_COUNT_SERDE, IpCount
from onceflow.core.kafka import read_committed
from onceflow.core.settings import KafkaSettings
from onceflow.ipcount.consumer import ip_count_table
from onceflow.ipcount.consumer.views import IpCountViews, ResultRow
from onceflow.testing.broker.clients import create_topic

W0 = 1_767_225_600_000
WINDOW = 5_000


def ip_count(window_start: int, ip: str, count: int) -> IpCount:
    return IpCount(window_start=window_start, window_end=window_start + WINDOW, ip=ip, count=count)


@dataclass
class Transaction:
    """Rows written in one Kafka transaction, committed or aborted."""

    rows: list[IpCount]
    commit: bool = True


class TransactionalWriter:
    """Writes IpCount rows like the Kafka sink does: key = ip, one Kafka transaction per batch."""

    def __init__(self, bootstrap: str, topic: str, transactional_id: str | None = None) -> None:
        self.topic = topic
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": transactional_id or f"test-sink-{uuid.uuid4().hex[:8]}",
                "enable.idempotence": True,
                "linger.ms": 5,
            }
        )
        self.producer.init_transactions(30)

    def write(self, txn: Transaction) -> None:
        self.producer.begin_transaction()
        for row in txn.rows:
            # the record time is the producer's clock, as the Kafka sink writes it: W0 is long past, and a
            # record stamped with it would fall to the topic's time retention as soon as its segment rolls
            self.producer.produce(self.topic, key=row["ip"].encode(), value=IP_COUNT_SERDE.encode(row))
        self.producer.flush(30)
        if txn.commit:
            self.producer.commit_transaction(30)
        else:
            self.producer.abort_transaction(30)

    def write_all(self, txns: Iterable[Transaction]) -> None:
        for txn in txns:
            self.write(txn)

    def write_values(self, values: Sequence[bytes], *, commit: bool = True) -> None:
        """Record values of any format (the rows of another job), in one transaction."""
        self.producer.begin_transaction()
        for value in values:
            self.producer.produce(self.topic, value=value)
        self.producer.flush(30)
        if commit:
            self.producer.commit_transaction(30)
        else:
            self.producer.abort_transaction(30)


def expected_from_topic(bootstrap: str, topic: str) -> tuple[dict[tuple[int, str], ResultRow], dict[int, int]]:
    """What the store must hold: the latest record per (window_start, ip) read with read_committed,
    and the number of committed records per partition."""
    latest: dict[tuple[int, str], ResultRow] = {}
    per_partition: dict[int, int] = {}
    # to the end offsets (LSO) seen first: an idle timeout would stop early on a loaded machine
    for record in read_committed(KafkaSettings(bootstrap_servers=bootstrap), topic, timeout=60):
        row = IP_COUNT_SERDE.decode(record.value or b"")
        latest[(row["window_start"], row["ip"])] = ResultRow(
            row["window_start"], row["window_end"], row["ip"], row["count"]
        )
        per_partition[record.partition] = per_partition.get(record.partition, 0) + 1
    return latest, per_partition


def ip_count_tables(settings: ConsumerLoopSettings) -> StoredTables:
    """The IP-count results of ``settings.topic``, as the example's extension stores them."""
    return StoredTables([ip_count_table(settings.topic, skip_undecodable=settings.skip_undecodable)])


def results_of(store: ResultsStore) -> list[ResultRow]:
    """Every IP-count row of the store's ``results``, through the example's views."""
    return IpCountViews(store).all_results()


def store_snapshot(store: ResultsStore) -> dict[tuple[int, str], ResultRow]:
    return {(row.window_start, row.ip): row for row in results_of(store)}


def wait_until(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def assert_store_equals_topic(
    store: ResultsStore, bootstrap: str, topic: str, group: str, *, timeout: float = 60.0
) -> dict[int, int]:
    """Wait until the store equals the topic exactly (rows, and applied records per partition =
    committed records per partition: a batch applied twice would count twice); return the counts.

    The topic is read again on every try: a transaction's commit markers may become visible to a
    new reader a moment after its producer's commit returned (Kafka writes them after the commit point).
    """
    expected, per_partition = expected_from_topic(bootstrap, topic)

    def caught_up() -> bool:
        nonlocal expected, per_partition
        applied = {p: o.applied_records for p, o in store.stored_offsets(group, topic).items()}
        if applied != per_partition:
            expected, per_partition = expected_from_topic(bootstrap, topic)
        return applied == per_partition

    try:
        wait_until(caught_up, timeout, "the consumer to apply every committed record")
    finally:
        applied = {p: o.applied_records for p, o in store.stored_offsets(group, topic).items()}
        assert applied == per_partition, f"applied {applied} != committed {per_partition}"
    assert store_snapshot(store) == expected
    return per_partition


@pytest.fixture
def kafka(broker: EmbeddedBroker) -> KafkaSettings:
    return KafkaSettings(bootstrap_servers=broker.bootstrap_servers)


@pytest.fixture
def make_topic(broker: EmbeddedBroker) -> Callable[..., str]:
    def make(name: str | None = None, partitions: int = 1) -> str:
        topic = name or f"ip_count_sink_{uuid.uuid4().hex[:8]}"
        create_topic(broker.bootstrap_servers, topic, partitions)
        return topic

    return make


def windows_rows(windows: Sequence[int], ips: Sequence[str], base: int = 1) -> list[IpCount]:
    return [ip_count(W0 + w * WINDOW, ip, base + w + i) for w in windows for i, ip in enumerate(ips)]
