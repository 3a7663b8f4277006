"""Avro records for any output: the writer schema derived from the output's Arrow schema, and rows.

=====================  ==============================================
Arrow (Spark) type     Avro type
=====================  ==============================================
string                 string
int8, int16, int32     int
int64                  long
float32 / float64      float / double
decimal128(p, s)       bytes, logicalType decimal (precision p, scale s)
bool                   boolean
binary                 bytes
date32                 int, logicalType date
timestamp              long, logicalType timestamp-micros
nullable field         ["null", T] with default null
=====================  ==============================================

:func:`arrow_schema` maps a writer schema back (``int`` to int32, timestamps to UTC timestamps), so a
reader can store any onceflow Avro record in a table.

The IP-count output (four non-null columns, record ``io.onceflow.v1.IpCount``) derives the same
fingerprint as :data:`onceflow.core.avro.IP_COUNT_SCHEMA` (logical types are not part of a
fingerprint), so readers of the IP-count topic decode what a bound job writes.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import re
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from onceflow.core.column_types import type_name
from onceflow.core.errors import SerializationError, UnsupportedColumnType

#: The Avro type of each column kind (:mod:`onceflow.core.column_types`); a new dict for every schema.
AVRO_TYPES: dict[str, Any] = {
    "string": "string",
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "long",
    "float32": "float",
    "float64": "double",
    "decimal": lambda d: {"type": "bytes", "logicalType": "decimal", "precision": d.precision, "scale": d.scale},
    "boolean": "boolean",
    "binary": "bytes",
    "date": lambda _: {"type": "int", "logicalType": "date"},
    "timestamp": lambda _: {"type": "long", "logicalType": "timestamp-micros"},
    "timestamp_tz": lambda _: {"type": "long", "logicalType": "timestamp-micros"},
}


def _avro_type(output: str, field: pa.Field) -> Any:
    try:
        return type_name(field.type, AVRO_TYPES)
    except TypeError:
        raise UnsupportedColumnType(output, field.name, str(field.type)) from None


def record_name(job: str, output: str) -> str:
    """The default record full name of a job's output: ``onceflow.<job>.<output>`` as Avro names."""
    part = re.sub(r"[^A-Za-z0-9_]", "_", job)
    return f"onceflow.{'_' + part if part[:1].isdigit() else part}.{output}"


def avro_schema(schema: pa.Schema, full_name: str, output: str = "") -> dict[str, Any]:
    """The Avro record schema of rows of ``schema`` (see the module table)."""
    namespace, _, name = full_name.rpartition(".")
    fields = []
    for field in schema:
        avro = _avro_type(output or name, field)
        if field.nullable:
            fields.append({"name": field.name, "type": ["null", avro], "default": None})
        else:
            fields.append({"name": field.name, "type": avro})
    record: dict[str, Any] = {"type": "record", "name": name, "fields": fields}
    if namespace:
        record["namespace"] = namespace
    return record


_AVRO_PRIMITIVES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "bytes": pa.binary(),
}


def _arrow_type(output: str, name: str, avro: Any, logical_types: bool) -> pa.DataType:
    """The inverse of :func:`_avro_type` (timestamps read back as UTC, as the Avro decoder returns them)."""
    if isinstance(avro, dict):
        base, logical = avro.get("type"), avro.get("logicalType") if logical_types else None
        if logical == "decimal" and base == "bytes":
            return pa.decimal128(int(avro["precision"]), int(avro.get("scale", 0)))
        if logical == "date" and base == "int":
            return pa.date32()
        if logical in ("timestamp-micros", "timestamp-millis") and base == "long":
            return pa.timestamp("us" if logical == "timestamp-micros" else "ms", tz="UTC")
        avro = base
    if isinstance(avro, str) and avro in _AVRO_PRIMITIVES:
        return _AVRO_PRIMITIVES[avro]
    raise UnsupportedColumnType(output, name, json.dumps(avro) if not isinstance(avro, str) else avro)


def arrow_schema(avro: Mapping[str, Any], *, logical_types: bool = True) -> pa.Schema:
    r"""The Arrow schema of records of the Avro record schema ``avro`` (the inverse of :func:`avro_schema`).

    A ``["null", T]`` union is a nullable field of T. ``logical_types`` False reads logical types as their
    raw Avro type (epoch-millisecond ``long``\ s stay int64), as a serde created with it decodes them.
    Raises :class:`UnsupportedColumnType` for a field no sink stores (arrays, maps, records, enums, ...).
    """
    output = str(avro.get("name", "record"))
    fields = []
    for field in avro.get("fields", ()):
        name, avro_type, nullable = str(field["name"]), field["type"], False
        if isinstance(avro_type, list):
            branches = [t for t in avro_type if t != "null"]
            if len(branches) != 1:
                raise UnsupportedColumnType(output, name, json.dumps(avro_type))
            avro_type, nullable = branches[0], len(branches) < len(field["type"])
        fields.append(pa.field(name, _arrow_type(output, name, avro_type, logical_types), nullable=nullable))
    return pa.schema(fields)


def avro_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows of ``table`` as the Avro encoder takes them, in one Arrow pass.

    Timestamps come as microseconds since the epoch and dates as days since it: the values their
    Avro logical types store, so the encoder writes the same bytes as from ``datetime`` and ``date``
    objects without building one per value (that conversion costs more than the encoding). A
    timestamp finer than microseconds is truncated to them, as ``timestamp-micros`` holds.
    """
    columns = [avro_storage(field, column) for field, column in zip(table.schema, table.columns, strict=True)]
    rows: list[dict[str, Any]] = pa.Table.from_arrays(columns, names=table.column_names).to_pylist()
    return rows


def avro_storage(field: pa.Field, column: pa.ChunkedArray) -> pa.ChunkedArray:
    """``column`` as what its Avro logical type stores: timestamps as epoch microseconds, dates as epoch days.

    Nanoseconds are truncated; a coarser timestamp beyond what int64 microseconds hold raises
    :class:`SerializationError` naming the column, never wraps around."""
    data_type = field.type
    if pa.types.is_timestamp(data_type):
        try:
            micros = column.cast(pa.timestamp("us", tz=data_type.tz), safe=data_type.unit != "ns")
        except pa.ArrowInvalid as exc:
            raise SerializationError(f"column {field.name!r} does not fit Avro timestamp-micros: {exc}") from None
        return micros.cast(pa.int64())
    if pa.types.is_date32(data_type):
        return column.cast(pa.int32())
    return column


def _json_value(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def json_value(row: dict[str, Any]) -> bytes:
    """One row as a JSON object: timestamps and dates ISO-8601, decimals as strings, bytes base64."""
    return json.dumps(row, default=_json_value, separators=(",", ":"), ensure_ascii=False).encode()


def json_field(data_type: pa.DataType, value: Any) -> Any:
    """The inverse of :func:`json_value` for one field: the JSON value as the Python value of ``data_type``."""
    if value is None:
        return None
    t = pa.types
    if t.is_timestamp(data_type):
        return dt.datetime.fromisoformat(value)
    if t.is_date32(data_type):
        return dt.date.fromisoformat(value)
    if t.is_decimal128(data_type):
        return decimal.Decimal(value)
    if t.is_binary(data_type) or t.is_large_binary(data_type):
        return base64.b64decode(value)
    return value
