"""The consumer as a real process: kill -9 at random moments, and two instances splitting partitions."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.consumer.store import PostgresResultsStore, SqliteResultsStore
from onceflow.consumer.tables import StoredTable
from onceflow.core.avro import SingleObjectSerde
from onceflow.core.avro.arrow import avro_schema
from onceflow.core.avro.schemas_topic import SchemasTopic
from onceflow.testing.consumer import ConsumerProcess

from .conftest import (
    Transaction,
    TransactionalWriter,
    assert_store_equals_topic,
    ip_count,
    results_of,
    wait_until,
    windows_rows,
)


class BackgroundWriter(threading.Thread):
    """Writes ``transactions`` transactions (every fourth aborted, with ips that are never committed)
    with a pause between them, on a thread."""

    def __init__(self, bootstrap: str, topic: str, transactions: int, pause: float, first_window: int = 0) -> None:
        super().__init__(daemon=True)
        self.writer = TransactionalWriter(bootstrap, topic)
        self.transactions = transactions
        self.pause = pause
        self.first_window = first_window
        self.error: BaseException | None = None

    def run(self) -> None:
        ips = [f"10.0.{i // 250}.{i % 250}" for i in range(40)]
        try:
            for n in range(self.transactions):
                window = self.first_window + n // 3
                if n % 4 == 3:
                    rows = [ip_count(window * 5000, f"10.99.0.{i}", 10_000 + n) for i in range(20)]
                    self.writer.write(Transaction(rows, commit=False))
                else:
                    self.writer.write(Transaction(windows_rows([window], ips, base=n)))
                time.sleep(self.pause)
        except BaseException as exc:
            self.error = exc
            raise


def consumer_settings(broker: EmbeddedBroker, topic: str, store: dict[str, Any], **consumer: Any) -> dict[str, Any]:
    return {
        "kafka": {"bootstrap_servers": broker.bootstrap_servers, "properties": {"session.timeout.ms": "6000"}},
        "consumer": {"topic": topic, "group_id": "results", "max_batch_records": 50, "max_batch_ms": 20, **consumer},
        "store": store,
        "log": {"level": "INFO"},
    }


@pytest.mark.slow
def test_kill_9_ten_times_leaves_the_store_equal_to_the_topic(
    broker: EmbeddedBroker, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_topic(partitions=3)
    db = tmp_path / "results.db"
    settings = consumer_settings(broker, topic, {"backend": "sqlite", "path": str(db)}, group_instance_id="consumer-0")
    process = ConsumerProcess(tmp_path / "consumer", settings)
    writer = BackgroundWriter(broker.bootstrap_servers, topic, transactions=240, pause=0.08)
    writer.start()
    rng = random.Random(8)
    kills = 0
    try:
        for _ in range(10):
            process.start()
            time.sleep(rng.uniform(0.4, 1.6))
            process.kill()
            kills += 1
        process.start()
        writer.join(120)
        assert writer.error is None and not writer.is_alive()
        store = SqliteResultsStore(db)
        counts = assert_store_equals_topic(store, broker.bootstrap_servers, topic, "results", timeout=90)
        assert not any(row.ip.startswith("10.99.") for row in results_of(store))
        store.close()
    except BaseException:
        print(process.log_tail(80))
        raise
    finally:
        process.stop()
    assert kills == 10 and process.starts == 11
    assert sum(counts.values()) == 180 * 40
    log = process.log_path.read_text()
    assert log.count("batch.applied") >= 20, "the consumer made progress between the kills"


def test_two_instances_split_the_partitions_and_a_stopped_ones_move(
    broker: EmbeddedBroker, make_topic: Callable[..., str], tmp_path: Path, postgres_dsn: str
) -> None:
    topic = make_topic(partitions=4)
    settings = consumer_settings(broker, topic, {"backend": "postgres", "dsn": postgres_dsn})
    first = ConsumerProcess(tmp_path / "a", settings).start()
    second = ConsumerProcess(tmp_path / "b", settings).start()
    store = PostgresResultsStore(postgres_dsn)
    writer = BackgroundWriter(broker.bootstrap_servers, topic, transactions=120, pause=0.05)
    try:
        writer.start()

        def owned() -> Counter[str]:
            return Counter(o.owner.rpartition(":")[2] for o in store.stored_offsets("results", topic).values())

        # The group deals 2 partitions to each. A partition's stored owner changes with the first batch
        # its new owner applies, so wait for that rather than for both names to show up: the first
        # instance may have applied every partition before the second joined.
        wait_until(
            lambda: owned() == {str(first.pid): 2, str(second.pid): 2}, 60, "each instance to apply 2 partitions"
        )
        assert second.stop() == 0  # graceful: commits its open batch, leaves the group
        writer.join(60)
        assert writer.error is None and not writer.is_alive()
        assert_store_equals_topic(store, broker.bootstrap_servers, topic, "results", timeout=60)
        owners = {o.owner for o in store.stored_offsets("results", topic).values()}
        assert {owner.rpartition(":")[2] for owner in owners} == {str(first.pid)}
    except BaseException:
        print("--- a ---\n" + first.log_tail(40) + "\n--- b ---\n" + second.log_tail(40))
        raise
    finally:
        store.close()
        first.stop()
        second.stop()


def test_kill_9_mid_way_stores_every_record_of_an_append_table_exactly_once(
    broker: EmbeddedBroker, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    """An append table has no key to hide a duplicate: only the offsets stored with the rows keep a
    record from being stored twice after a kill -9 (or lost)."""
    ip_counts, events = make_topic(), make_topic(partitions=2)
    schema = pa.schema([pa.field("seq", pa.int64(), nullable=False), pa.field("ip", pa.string())])
    avro = avro_schema(schema, "onceflow.events.results")
    SchemasTopic(broker.bootstrap_servers).publish(avro)
    serde: SingleObjectSerde[dict[str, Any]] = SingleObjectSerde(avro)
    db = tmp_path / "results.db"
    settings = consumer_settings(broker, ip_counts, {"backend": "sqlite", "path": str(db)}, group_instance_id="c-0")
    settings["tables"] = [{"topic": events, "table": "events", "mode": "append"}]
    process = ConsumerProcess(tmp_path / "consumer", settings)
    writer = TransactionalWriter(broker.bootstrap_servers, events)
    committed: list[int] = []

    def write() -> None:
        for n in range(40):
            values = [serde.encode({"seq": n * 10 + i, "ip": f"10.0.0.{i}"}) for i in range(10)]
            writer.write_values(values, commit=n % 4 != 3)
            if n % 4 != 3:
                committed.extend(n * 10 + i for i in range(10))
            time.sleep(0.03)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    table = StoredTable(topic=events, table="events")
    try:
        for delay in (0.8, 1.2):
            process.start()
            time.sleep(delay)
            process.kill()
        process.start()
        thread.join(60)
        assert not thread.is_alive()
        store = SqliteResultsStore(db)

        def stored() -> list[int]:
            found = store.table_schemas().get("events")
            return [] if found is None else [row["seq"] for _, row in store.table_rows(table, found, 10_000, None)]

        wait_until(lambda: len(stored()) >= len(committed), 60, "every committed record")
        assert sorted(stored()) == sorted(committed)  # each committed record once, no aborted one
        assert sum(o.applied_records for o in store.stored_offsets("results", events).values()) == len(committed)
        store.close()
    except BaseException:
        print(process.log_tail(80))
        raise
    finally:
        process.stop()
    assert process.starts == 3
