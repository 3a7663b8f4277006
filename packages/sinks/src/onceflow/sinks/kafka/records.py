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
from onceflow.core.kafka import produce
from onceflow.sinks.base import BoundRows

DeliveryCallback = Callable[[KafkaError | None, Message], None]


class BindingRecords:
    """One record per row of a binding: key = the binding's key columns (:func:`record_key`), value =
    Avro single-object encoding with the schema derived from the output (:meth:`writer_schema`), or
    JSON; headers = the binding's header columns. Each (job, binding)'s encoder is built once."""

    def __init__(self) -> None:
        self._encoders: dict[tuple[str, SinkBinding], Callable[[Any], bytes]] = {}

    @staticmethod
    def writer_schema(job: str, binding: SinkBinding, schema: pa.Schema) -> dict[str, Any]:
        """The Avro writer schema of ``binding``'s values for ``job``."""
        return avro_schema(schema, binding.record_name or record_name(job, binding.output), binding.output)

    def _encoder(self, job: str, binding: SinkBinding, rows: pa.Table) -> Callable[[Any], bytes]:
        """The value encoder of ``binding`` for ``job`` (Avro serde, or JSON), built once."""
        key = (job, binding)
        encoder = self._encoders.get(key)
        if encoder is None:
            if binding.value_format is ValueFormat.JSON:
                encoder = json_value
            else:
                schema = binding.schema if binding.schema is not None else rows.schema
                encoder = SingleObjectSerde(self.writer_schema(job, binding, schema), logical_types=True).encode
            self._encoders[key] = encoder
        return encoder

    def produce(self, producer: Producer, job: str, bound: BoundRows, on_delivery: DeliveryCallback) -> None:
        """Produce one record per row of ``bound`` to its binding's topic."""
        binding, rows = bound.binding, bound.rows
        if not rows.num_rows:
            return
        encode = self._encoder(job, binding, rows)
        avro = binding.value_format is ValueFormat.AVRO
        values = [encode(row) for row in (avro_rows(rows) if avro else rows.to_pylist())]
        # Keys and headers from the Python values of their own columns, whatever the value format.
        keys = [record_key(row, binding.keys) for row in _column_rows(rows, binding.keys)] if binding.keys else None
        headers = [_headers(row) for row in _column_rows(rows, binding.headers)] if binding.headers else None
        for i, value in enumerate(values):
            produce_record(
                producer,
                binding.topic,
                keys[i] if keys is not None else None,
                value,
                on_delivery=on_delivery,
                headers=headers[i] if headers is not None else None,
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


def record_key(row: dict[str, Any], columns: Sequence[str]) -> bytes | None:
    """The record key of ``row``: one string column as UTF-8, one binary column as is, else a JSON array."""
    if len(columns) == 1:
        value = row[columns[0]]
        if value is None or isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode()
    return json.dumps([row[c] for c in columns], default=str, separators=(",", ":")).encode()
