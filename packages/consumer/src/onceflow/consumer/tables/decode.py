"""Record values to rows: Avro single-object encoding (writer schema by fingerprint) or JSON (declared columns)."""

from __future__ import annotations

import abc
import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa

from onceflow.consumer.exceptions import RecordRejected
from onceflow.consumer.tables.stored import StoredTable
from onceflow.contract import UnsupportedColumnType, ValueFormat
from onceflow.core.avro import SingleObjectSerde
from onceflow.core.avro.arrow import arrow_schema, json_field
from onceflow.core.avro.schemas_topic import SchemasTopic
from onceflow.core.errors import SerializationError


@dataclass(frozen=True)
class DecodedRecord:
    """One record as a row (Python values of ``schema``'s Arrow types); ``schema_id`` names the schema."""

    row: dict[str, Any]
    schema: pa.Schema
    schema_id: str


class RecordDecoder(abc.ABC):
    """Decodes the values of one topic. ``decode`` raises :class:`RecordRejected` with the reason."""

    @abc.abstractmethod
    def decode(self, value: bytes | None) -> DecodedRecord:
        """The row in ``value``."""


class AvroDecoder(RecordDecoder):
    """Avro single-object encoded values; the writer schema is resolved by its fingerprint (onceflow's
    own schemas, then the schemas topic) and is the row's schema (see :func:`arrow_schema`)."""

    def __init__(self, schemas: SchemasTopic, *, logical_types: bool = True) -> None:
        self._schemas = schemas
        self._logical_types = logical_types
        self._by_fingerprint: dict[bytes, tuple[SingleObjectSerde[dict[str, Any]], pa.Schema] | str] = {}

    def decode(self, value: bytes | None) -> DecodedRecord:
        if not value:
            raise RecordRejected("a null or empty value (not an Avro record)")
        try:
            writer = self._schemas.serde_for(value)
        except SerializationError as exc:
            raise RecordRejected(str(exc)) from None
        known = self._by_fingerprint.get(writer.fingerprint)
        if known is None:
            try:
                schema = arrow_schema(writer.schema, logical_types=self._logical_types)
                known = (SingleObjectSerde(writer.schema, logical_types=self._logical_types), schema)
            except UnsupportedColumnType as exc:
                known = f"writer schema {writer.name} ({writer.fingerprint.hex()}): {exc}"
            self._by_fingerprint[writer.fingerprint] = known
        if isinstance(known, str):
            raise RecordRejected(known)
        serde, schema = known
        try:
            row = serde.decode(value)
        except SerializationError as exc:
            raise RecordRejected(str(exc)) from None
        return DecodedRecord(dict(row), schema, writer.fingerprint.hex())


#: Python characters that have no UTF-8 encoding (lone surrogates, which JSON's ``\\ud800`` escapes make).
_SURROGATES: Final = re.compile("[\ud800-\udfff]")


def _surely_fits(data_type: pa.DataType) -> Callable[[Any], bool] | None:
    """A check that answers True only for values Arrow converts to ``data_type`` (False: ask Arrow),
    or None when there is none for the type (decimals and the rarer types: always ask Arrow)."""
    t = pa.types
    if t.is_integer(data_type):
        low, high = (-(1 << (data_type.bit_width - 1)), (1 << (data_type.bit_width - 1)) - 1)
        if t.is_unsigned_integer(data_type):
            low, high = 0, (1 << data_type.bit_width) - 1
        return lambda v: type(v) is int and low <= v <= high
    if t.is_float64(data_type) or t.is_float32(data_type):
        return lambda v: type(v) is float
    if t.is_boolean(data_type):
        return lambda v: type(v) is bool
    if t.is_string(data_type) or t.is_large_string(data_type):
        return lambda v: type(v) is str and (v.isascii() or _SURROGATES.search(v) is None)
    if t.is_timestamp(data_type) and data_type.unit == "us":
        return lambda v: type(v) is dt.datetime
    if t.is_date32(data_type):
        return lambda v: type(v) is dt.date
    if t.is_binary(data_type) or t.is_large_binary(data_type):
        return lambda v: type(v) is bytes
    return None


class RowFit:
    """Whether a row of JSON field values (:func:`json_field`'s) converts to ``schema``'s columns.

    Arrow decides: a one-row conversion of the row (about 15 µs). The values Arrow surely converts
    (an int in the column's range, a str without lone surrogates, a float, a bool, a datetime for
    microsecond timestamps, a date, bytes) are answered in Python first, so a typical row costs
    about a microsecond; a decimal, or any other value, is converted by Arrow as before.
    """

    def __init__(self, schema: pa.Schema) -> None:
        self._schema = schema
        checks = [(field.name, _surely_fits(field.type)) for field in schema]
        self._checks = [(name, check) for name, check in checks if check is not None]
        #: Every column has a Python check (else every row goes to Arrow).
        self._checked = len(self._checks) == len(checks)

    def reason(self, row: dict[str, Any]) -> str | None:
        """None when ``row`` fits, else Arrow's reason."""
        if self._checked and all(row[name] is None or check(row[name]) for name, check in self._checks):
            return None
        try:
            pa.RecordBatch.from_pylist([row], schema=self._schema)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            return str(exc)
        return None


class JsonDecoder(RecordDecoder):
    """JSON objects as the Kafka sink writes them (timestamps ISO-8601, decimals as strings, bytes
    base64), read into the declared columns. Fields the columns do not name are ignored; a missing
    field is null."""

    def __init__(self, schema: pa.Schema) -> None:
        self._schema = schema
        self._not_null = [f.name for f in schema if not f.nullable]
        self._fit = RowFit(schema)

    def decode(self, value: bytes | None) -> DecodedRecord:
        if not value:
            raise RecordRejected("a null or empty value (not a JSON object)")
        try:
            doc = json.loads(value)
        except (ValueError, UnicodeDecodeError) as exc:
            raise RecordRejected(f"not JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise RecordRejected(f"not a JSON object but a {type(doc).__name__}")
        row: dict[str, Any] = {}
        for field in self._schema:
            try:
                row[field.name] = json_field(field.type, doc.get(field.name))
            except (ValueError, TypeError, ArithmeticError) as exc:
                raise RecordRejected(f"column {field.name!r} ({field.type}): {exc}") from None
        nulls = [name for name in self._not_null if row[name] is None]
        if nulls:
            raise RecordRejected(f"NOT NULL column(s) {', '.join(nulls)} missing or null")
        reason = self._fit.reason(row)
        if reason is not None:
            raise RecordRejected(f"does not fit the columns: {reason}")
        return DecodedRecord(row, self._schema, "declared")


def decoder_for(table: StoredTable, schemas: SchemasTopic) -> RecordDecoder:
    """The decoder of ``table``'s topic."""
    if table.value_format is ValueFormat.JSON:
        if table.schema is None:
            raise ValueError(f"table {table.table!r}: a JSON topic needs declared columns")
        return JsonDecoder(table.schema)
    return AvroDecoder(schemas, logical_types=table.avro_logical_types)
