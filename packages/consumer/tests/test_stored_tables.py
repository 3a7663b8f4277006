"""Any sink topic stored into a table, on SQLite and on a real PostgreSQL: Avro (writer schema from the
schemas topic) and JSON (declared columns), upsert and append, undecodable records skipped and logged."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.consumer.loop import ResultsConsumer
from onceflow.consumer.settings import ConsumerSettings
from onceflow.consumer.store import PostgresResultsStore, ResultsStore, SqliteResultsStore
from onceflow.consumer.tables import StoredTables
from onceflow.core.avro import SingleObjectSerde
from onceflow.core.avro.arrow import avro_schema, json_value
from onceflow.core.avro.schemas_topic import SchemasTopic
from onceflow.core.logging import record_fields
from onceflow.core.settings import KafkaSettings
from onceflow.testing.broker.clients import produce_acked

from .conftest import TransactionalWriter, wait_until

UTC = dt.UTC
#: The output of a "server errors" job, as its Kafka sink writes it in Avro.
ERRORS = pa.schema(
    [
        pa.field("event_time", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("ip", pa.string(), nullable=False),
        pa.field("status", pa.int32(), nullable=False),
        pa.field("path", pa.string()),
        pa.field("bytes", pa.decimal128(10, 2)),
    ]
)
TRAFFIC_COLUMNS = {"ip": "string", "requests": "long not null", "last_seen": "timestamp", "bot": "boolean"}


def error_row(i: int) -> dict[str, Any]:
    return {
        "event_time": dt.datetime(2026, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i, microseconds=i),
        "ip": f"10.0.0.{i % 3}",
        "status": 500 + i % 4,
        "path": None if i % 5 == 0 else f"/p/{i}",
        "bytes": decimal.Decimal(f"{i}.25"),
    }


def traffic_row(ip: str, requests: int, bot: bool | None = None) -> dict[str, Any]:
    return {"ip": ip, "requests": requests, "last_seen": dt.datetime(2026, 1, 1, 1, requests, tzinfo=UTC), "bot": bot}


def publish_avro(bootstrap: str, schema: pa.Schema, name: str) -> SingleObjectSerde[dict[str, Any]]:
    """Publish the writer schema like the Kafka sink's PrepareBindings, and return its encoder."""
    avro = avro_schema(schema, name)
    SchemasTopic(bootstrap).publish(avro)
    return SingleObjectSerde(avro, logical_types=True)


def settings_for(broker: EmbeddedBroker, errors: str, traffic: str, store: dict[str, Any]) -> ConsumerSettings:
    return ConsumerSettings.model_validate(
        {
            "kafka": {"bootstrap_servers": broker.bootstrap_servers},
            "consumer": {"topic": "", "group_id": "stored", "max_batch_records": 4, "max_batch_ms": 20},
            "store": store,
            "tables": [
                {"topic": errors, "table": "server_errors", "mode": "append"},
                {"topic": traffic, "table": "traffic", "mode": "upsert", "keys": ["ip"], "value_format": "json",
                 "columns": TRAFFIC_COLUMNS},
            ],
        }
    )  # fmt: skip


@pytest.fixture(params=["sqlite", "postgres"])
def store_settings(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    if request.param == "sqlite":
        return {"backend": "sqlite", "path": str(tmp_path / "results.db")}
    return {"backend": "postgres", "dsn": request.getfixturevalue("postgres_dsn")}


def open_test_store(settings: ConsumerSettings) -> ResultsStore:
    store: ResultsStore
    if settings.store.backend == "postgres":
        store = PostgresResultsStore(settings.store.dsn)
    else:
        store = SqliteResultsStore(settings.store.path)
    store.create_schema()
    return store


def all_rows(store: ResultsStore, tables: StoredTables, name: str) -> list[dict[str, Any]]:
    table = tables.by_table(name)
    assert table is not None
    schema = store.table_schemas().get(name)
    return [] if schema is None else [row for _, row in store.table_rows(table, schema, 10_000, None)]


@pytest.fixture
def topics(make_topic: Callable[..., str]) -> tuple[str, str]:
    return make_topic(partitions=2), make_topic()


def test_avro_append_and_json_upsert_tables_with_undecodable_records_skipped(
    broker: EmbeddedBroker,
    kafka: KafkaSettings,
    topics: tuple[str, str],
    store_settings: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    errors, traffic = topics
    settings = settings_for(broker, errors, traffic, store_settings)
    tables = StoredTables.from_settings(settings)
    store = open_test_store(settings)
    serde = publish_avro(broker.bootstrap_servers, ERRORS, "onceflow.server_errors.results")
    avro = TransactionalWriter(broker.bootstrap_servers, errors)
    avro.write_values([serde.encode(error_row(i)) for i in range(6)])
    avro.write_values([serde.encode(error_row(99))], commit=False)  # aborted: never stored
    produce_acked(broker.bootstrap_servers, errors, [b"\xc3\x01not an avro record"])
    avro.write_values([serde.encode(error_row(i)) for i in range(6, 10)])
    as_json = TransactionalWriter(broker.bootstrap_servers, traffic)
    as_json.write_values([json_value(traffic_row("10.0.0.1", 1)), json_value(traffic_row("10.0.0.2", 2, True))])
    as_json.write_values([b"{not json", json.dumps({"requests": 3}).encode()])  # the second has no key
    as_json.write_values([json_value(traffic_row("10.0.0.1", 7, False))])

    consumer = ResultsConsumer(kafka, settings.consumer, store, tables=tables)
    with caplog.at_level(logging.ERROR, logger="onceflow.consumer"):
        consumer.start()
        try:
            wait_until(lambda: len(all_rows(store, tables, "server_errors")) == 10, 30, "the Avro rows")
            wait_until(
                lambda: sum(o.next_offset for o in store.stored_offsets("stored", traffic).values()) >= 7,
                30, "the JSON topic to its end",
            )  # fmt: skip
        finally:
            consumer.stop()
    assert consumer.failure is None

    stored = sorted(all_rows(store, tables, "server_errors"), key=lambda r: r["event_time"])
    assert stored == [error_row(i) for i in range(10)]  # typed values back: timestamps, decimals, nulls
    assert all_rows(store, tables, "traffic") == [traffic_row("10.0.0.1", 7, False), traffic_row("10.0.0.2", 2, True)]
    applied = {t: sum(o.applied_records for o in store.stored_offsets("stored", t).values()) for t in (errors, traffic)}
    assert applied == {errors: 10, traffic: 3}

    skipped = [record_fields(r) for r in caplog.records if r.getMessage() == "record.skipped"]
    assert {(f["topic"], f["table"]) for f in skipped} == {(errors, "server_errors"), (traffic, "traffic")}
    reasons = sorted(str(f["reason"]) for f in skipped)
    assert len(reasons) == 3 and all(isinstance(f["offset"], int) and "partition" in f for f in skipped)
    assert any("not JSON" in r for r in reasons) and any("key column(s) ip" in r for r in reasons)
    metric = consumer.metrics.undecodable
    assert sum(metric.labels(errors, str(p))._value.get() for p in (0, 1)) == 1
    assert metric.labels(traffic, "0")._value.get() == 2
    store.close()


def test_a_record_that_does_not_fit_its_table_is_skipped_and_an_added_nullable_column_is_created(
    broker: EmbeddedBroker, kafka: KafkaSettings, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    errors, traffic = make_topic(), make_topic()
    settings = settings_for(broker, errors, traffic, {"backend": "sqlite", "path": str(tmp_path / "r.db")})
    tables = StoredTables.from_settings(settings)
    store = open_test_store(settings)
    first = publish_avro(broker.bootstrap_servers, ERRORS, "onceflow.errors.results")
    wider = ERRORS.append(pa.field("agent", pa.string()))
    second = publish_avro(broker.bootstrap_servers, wider, "onceflow.errors.results")
    narrower = publish_avro(broker.bootstrap_servers, ERRORS.remove(1), "onceflow.errors.results")  # no ip
    writer = TransactionalWriter(broker.bootstrap_servers, errors)
    writer.write_values(
        [first.encode(error_row(1)), second.encode({**error_row(2), "agent": "bot"}), narrower.encode(error_row(3))]
    )
    consumer = ResultsConsumer(kafka, settings.consumer, store, tables=tables).start()
    try:
        wait_until(lambda: sum(o.next_offset for o in store.stored_offsets("stored", errors).values()) >= 3, 30, "all")
    finally:
        consumer.stop()
    assert consumer.failure is None
    rows = sorted(all_rows(store, tables, "server_errors"), key=lambda r: r["event_time"])
    assert rows == [{**error_row(1), "agent": None}, {**error_row(2), "agent": "bot"}]
    assert consumer.metrics.undecodable.labels(errors, "0")._value.get() == 1


def test_settings_name_what_is_wrong() -> None:
    bad = [
        ({"topic": "t", "table": "x", "mode": "upsert"}, "mode 'upsert' needs keys"),
        ({"topic": "t", "table": "x", "keys": ["a"]}, "keys are for mode 'upsert'"),
        ({"topic": "t", "table": "x", "value_format": "json"}, "value_format 'json' needs columns"),
        ({"topic": "t", "table": "x", "value_format": "json", "columns": {"a": "uuid"}}, "column 'a' has type 'uuid'"),
        ({"topic": "t", "table": "results"}, "reserved"),
        ({"topic": "ip_count_sink", "table": "x"}, "a topic is stored once"),
        ({"topic": "t", "table": "bad-name"}, "table"),
    ]
    for entry, message in bad:
        with pytest.raises(ValueError, match=message):
            ConsumerSettings.model_validate({"tables": [entry]})
    with pytest.raises(ValueError, match="nothing to consume"):
        ConsumerSettings.model_validate({"consumer": {"topic": ""}})
    with pytest.raises(ValueError, match="each topic is stored once; repeated: t"):
        ConsumerSettings.model_validate({"tables": [{"topic": "t", "table": "a"}, {"topic": "t", "table": "b"}]})
    with pytest.raises(ValueError, match="each table is stored once; repeated: a"):
        ConsumerSettings.model_validate({"tables": [{"topic": "t", "table": "a"}, {"topic": "u", "table": "a"}]})
    two = [{"name": "db", "kind": "sqlite", "path": "x"}, {"name": "db", "kind": "sqlite", "path": "y"}]
    with pytest.raises(ValueError, match="sink names must be unique; repeated: db"):
        ConsumerSettings.model_validate({"audit": {"sinks": two}})
