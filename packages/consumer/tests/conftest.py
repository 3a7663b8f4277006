"""Shared helpers of the consumer tests: IpCount records and transactional writes to the results topic
(:mod:`onceflow.testing.consumer.ip_counts`), and the expected store contents (the latest record per
key, read with read_committed)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.consumer.settings import ConsumerLoopSettings
from onceflow.consumer.store import ResultsStore
from onceflow.consumer.tables import StoredTables
from onceflow.core.avro import IP_COUNT_SERDE, IpCount
from onceflow.core.kafka import read_committed
from onceflow.core.settings import KafkaSettings
from onceflow.ipcount.consumer import ip_count_table
from onceflow.ipcount.consumer.views import ResultRow
from onceflow.testing.consumer.ip_counts import (
    W0,
    WINDOW,
    Transaction,
    TransactionalWriter,
    ip_count,
    results_of,
    wait_until,
)

# the shared writers and readers, for this directory's tests (``from .conftest import ...``)
__all__ = ["W0", "WINDOW", "Transaction", "TransactionalWriter", "ip_count", "results_of", "wait_until"]


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


def store_snapshot(store: ResultsStore) -> dict[tuple[int, str], ResultRow]:
    return {(row.window_start, row.ip): row for row in results_of(store)}


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


def windows_rows(windows: Sequence[int], ips: Sequence[str], base: int = 1) -> list[IpCount]:
    return [ip_count(W0 + w * WINDOW, ip, base + w + i) for w in windows for i, ip in enumerate(ips)]
