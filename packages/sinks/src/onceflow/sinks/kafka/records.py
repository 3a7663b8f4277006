"""How the Kafka sink turns a binding's rows into records: key, value encoding, headers, timestamp."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
from confluent_kafka import KafkaError, Message, Producer

from onceflow.contract import SinkBinding, ValueFormat
from onceflow.core.avro import SingleObjectSerde
from onceflow.core.avro.arrow import avro_rows, avro_schema, json_value, record_name
from onceflow.core.avro.columnar import encode_table
from onceflow.core.kafka import produce, produce_all
from onceflow.sinks.base import BoundRows

DeliveryCallback = Callable[[KafkaError | None, Message], None]


class BindingRecords:
    """One record per row of a binding: key = the binding's key columns (:func:`record_key`), value =
    Avro single-object encoding with the schema derived from the output (:meth:`writer_schema`), or
    JSON; headers = the binding's header columns. Each (job, binding)'s serde is built once.

    Avro values of a whole batch are encoded column by column
    (:func:`~onceflow.core.avro.columnar.encode_table`, the same bytes); a shape it does not cover
    (decimals) goes through the serde row by row."""

    def __init__(self) -> None:
        self._serdes: dict[tuple[str, SinkBinding], SingleObjectSerde[Any]] = {}

    @staticmethod
    def writer_schema(job: str, binding: SinkBinding, schema: pa.Schema) -> dict[str, Any]:
        """The Avro writer schema of ``binding``'s values for ``job``."""
        return avro_schema(schema, binding.record_name or record_name(job, binding.output), binding.output)

    def _serde(self, job: str, binding: SinkBinding, rows: pa.Table) -> SingleObjectSerde[Any]:
        """The Avro serde of ``binding`` for ``job``, built once."""
        key = (job, binding)
        serde = self._serdes.get(key)
        if serde is None:
            schema = binding.schema if binding.schema is not None else rows.schema
            serde = SingleObjectSerde(self.writer_schema(job, binding, schema), logical_types=True)
            self._serdes[key] = serde
        return serde

    def values(self, job: str, binding: SinkBinding, rows: pa.Table) -> list[bytes]:
        """The record value of every row of ``rows``, in order."""
        if binding.value_format is ValueFormat.JSON:
            return [json_value(row) for row in rows.to_pylist()]
        serde = self._serde(job, binding, rows)
        encoded = encode_table(rows, serde.schema, serde.header)
        if encoded is not None:
            return encoded
        return [serde.encode(row) for row in avro_rows(rows)]

    def produce(self, producer: Producer, job: str, bound: BoundRows, on_delivery: DeliveryCallback) -> None:
        """Produce one record per row of ``bound`` to its binding's topic."""
        binding, rows = bound.binding, bound.rows
        if not rows.num_rows:
            return
        values = self.values(job, binding, rows)
        # Keys and headers from the Python values of their own columns, whatever the value format.
        keys = record_keys(rows, binding.keys) if binding.keys else None
        if not binding.headers:  # one call queues them all (librdkafka takes no headers in a batch)
            batch: list[dict[str, Any]] = [{"value": value} for value in values]
            if keys is not None:
                for record, key in zip(batch, keys, strict=True):
                    record["key"] = key
            produce_all(producer, binding.topic, batch, on_delivery=on_delivery)
            producer.poll(0)
            return
        headers = [_headers(row) for row in _column_rows(rows, binding.headers)]
        for i, value in enumerate(values):
            produce_record(
                producer,
                binding.topic,
                keys[i] if keys is not None else None,
                value,
                on_delivery=on_delivery,
                headers=headers[i],
            )


def _column_rows(rows: pa.Table, columns: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of only ``columns`` of ``rows``, as Python values."""
    selected: list[dict[str, Any]] = rows.select(list(columns)).to_pylist()
    return selected


def _headers(row: dict[str, Any]) -> list[tuple[str, bytes | None]]:
    """A row's header columns as record headers: each value as its string, UTF-8."""
    return [(name, None if value is None else str(value).encode()) for name, value in row.items()]


def produce_record(
    producer: Producer,
    topic: str,
    key: bytes | None,
    value: bytes,
    *,
    on_delivery: DeliveryCallback,
    headers: list[tuple[str, bytes | None]] | None = None,
) -> None:
    """Produce one record; its timestamp is the producer's clock (CreateTime), never an event time: a
    record stamped with the time of a months-old log line would fall to the topic's time retention
    as soon as its segment rolls, and the sink would silently lose committed rows."""
    extra: dict[str, Any] = {}
    if headers:
        extra["headers"] = headers
    produce(producer, topic, value=value, key=key, on_delivery=on_delivery, **extra)
    producer.poll(0)


def record_keys(rows: pa.Table, columns: Sequence[str]) -> list[bytes | None]:
    """:func:`record_key` of every row: one string or binary column is taken as its bytes in one
    Arrow pass (the same bytes: UTF-8, or as is)."""
    if len(columns) == 1:
        column = rows.column(columns[0])
        t = pa.types
        if any(check(column.type) for check in (t.is_string, t.is_large_string, t.is_binary, t.is_large_binary)):
            keys: list[bytes | None] = column.cast(pa.large_binary()).to_pylist()
            return keys
    return [record_key(row, columns) for row in _column_rows(rows, columns)]


def record_key(row: dict[str, Any], columns: Sequence[str]) -> bytes | None:
    """The record key of ``row``: one string column as UTF-8, one binary column as is, else a JSON array."""
    if len(columns) == 1:
        value = row[columns[0]]
        if value is None or isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode()
    return json.dumps([row[c] for c in columns], default=str, separators=(",", ":")).encode()
