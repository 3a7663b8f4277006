"""Declared columns of a stored table: Spark's type names to Arrow types.

A JSON record carries no schema, so a ``[[tables]]`` entry of a JSON topic declares its columns by
the names a job author knows from Spark (``long``, ``timestamp``, ``decimal(10,2)``...). The Arrow
type is what the sinks' table logic (:mod:`onceflow.sinks.tables`) turns into column types.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

import pyarrow as pa

#: Spark SQL's names (and their aliases) of the types every sink stores.
TYPE_NAMES: Final[Mapping[str, pa.DataType]] = {
    "string": pa.string(),
    "byte": pa.int8(),
    "tinyint": pa.int8(),
    "short": pa.int16(),
    "smallint": pa.int16(),
    "int": pa.int32(),
    "integer": pa.int32(),
    "long": pa.int64(),
    "bigint": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_NOT_NULL = re.compile(r"\s+not\s+null$")


def parse_column_type(table: str, column: str, text: str) -> pa.Field:
    """The Arrow field of ``column`` declared as ``text`` (``<type>`` or ``<type> not null``).

    Raises ValueError naming the table, the column and what is wrong.
    """
    if not _NAME.match(column):
        raise ValueError(f"table {table!r}: column name {column!r} must match {_NAME.pattern}")
    spec = text.strip().lower()
    nullable = _NOT_NULL.search(spec) is None
    spec = _NOT_NULL.sub("", spec)
    decimal = _DECIMAL.match(spec)
    if decimal is not None:
        precision, scale = int(decimal.group(1)), int(decimal.group(2))
        if not 1 <= precision <= 38 or scale > precision:
            raise ValueError(
                f"table {table!r}: column {column!r}: {text!r} needs 1 <= precision <= 38 and scale <= precision"
            )
        return pa.field(column, pa.decimal128(precision, scale), nullable=nullable)
    data_type = TYPE_NAMES.get(spec)
    if data_type is None:
        known = ", ".join([*TYPE_NAMES, "decimal(p,s)"])
        raise ValueError(f"table {table!r}: column {column!r} has type {text!r}; known types: {known}")
    return pa.field(column, data_type, nullable=nullable)


def parse_columns(table: str, columns: Mapping[str, str]) -> pa.Schema | None:
    """The schema of the declared ``columns`` (in their order), or None when none are declared."""
    if not columns:
        return None
    return pa.schema([parse_column_type(table, name, text) for name, text in columns.items()])
