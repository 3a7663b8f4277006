"""IP-count results as the Kafka sink writes them (one Kafka transaction per batch, key = ip), and as a
consumer's store holds them (through the example's views): the consumer's and the example's tests."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from confluent_kafka import Producer

from onceflow.consumer.store import ResultsStore
from onceflow.core.avro import IP_COUNT_SERDE, IpCount
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


def results_of(store: ResultsStore) -> list[ResultRow]:
    """Every IP-count row of the store's ``results``, through the example's views."""
    return IpCountViews(store).all_results()


def wait_until(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def new_topic(bootstrap: str, partitions: int = 1, name: str | None = None) -> str:
    """A new topic (a fresh ``ip_count_sink_...`` name unless ``name``) with ``partitions`` partitions."""
    topic = name or f"ip_count_sink_{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, partitions)
    return topic
