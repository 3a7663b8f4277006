"""Column types and values per SQL dialect.

=====================  ==========================  ==================================
Arrow (Spark) type     PostgreSQL                  SQLite (storage)
=====================  ==========================  ==================================
string                 text                        TEXT
int8, int16            smallint                    INTEGER
int32                  integer                     INTEGER
int64                  bigint                      INTEGER
float32 / float64      real / double precision     REAL
decimal128(p, s)       numeric(p,s)                TEXT (the exact decimal, e.g. "1.250")
bool                   boolean                     INTEGER (0 / 1)
binary                 bytea                       BLOB
date32                 date                        TEXT (ISO-8601 date)
timestamp with tz      timestamp with time zone    TEXT (ISO-8601, UTC offset included)
timestamp without tz   timestamp without time zone TEXT (ISO-8601)
=====================  ==========================  ==================================
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyarrow as pa

from onceflow.core.column_types import decimal_name, type_name
from onceflow.core.errors import UnsupportedColumnType

POSTGRES_TYPES: dict[str, str | Callable[[pa.DataType], str]] = {
    "string": "text",
    "int8": "smallint",
    "int16": "smallint",
    "int32": "integer",
    "int64": "bigint",
    "float32": "real",
    "float64": "double precision",
    "decimal": decimal_name("numeric({precision},{scale})"),
    "boolean": "boolean",
    "binary": "bytea",
    "date": "date",
    "timestamp": "timestamp without time zone",
    "timestamp_tz": "timestamp with time zone",
}
SQLITE_TYPES: dict[str, str | Callable[[pa.DataType], str]] = {
    **dict.fromkeys(("int8", "int16", "int32", "int64", "boolean"), "INTEGER"),
    **dict.fromkeys(("float32", "float64"), "REAL"),
    "binary": "BLOB",
    **dict.fromkeys(("string", "decimal", "date", "timestamp", "timestamp_tz"), "TEXT"),
}


_postgres_type = partial(type_name, names=POSTGRES_TYPES)
_sqlite_type = partial(type_name, names=SQLITE_TYPES)


def _sqlite_value(data_type: pa.DataType) -> Callable[[Any], Any] | None:
    """How a Python value of ``data_type`` is stored in SQLite; None = as it is."""
    t = pa.types
    if t.is_boolean(data_type):
        return lambda v: None if v is None else int(v)
    if t.is_decimal128(data_type):
        return lambda v: None if v is None else format(v, "f")
    if t.is_date32(data_type) or t.is_timestamp(data_type):
        return lambda v: None if v is None else v.isoformat()
    return None


def _sqlite_read(data_type: pa.DataType) -> Callable[[Any], Any] | None:
    """The inverse of :func:`_sqlite_value`: a stored SQLite value as the Python value of ``data_type``."""
    t = pa.types
    if t.is_boolean(data_type):
        return lambda v: None if v is None else bool(v)
    if t.is_decimal128(data_type):
        return lambda v: None if v is None else decimal.Decimal(str(v))
    if t.is_date32(data_type):
        return lambda v: None if v is None else dt.date.fromisoformat(v)
    if t.is_timestamp(data_type):
        return lambda v: None if v is None else dt.datetime.fromisoformat(v)
    return None


def _sqlite_affinity(declared: str) -> str:
    """SQLite's type affinity of a declared column type (its rules, in order): what it really stores."""
    upper = declared.upper()
    if "INT" in upper:
        return "INTEGER"
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if not upper or "BLOB" in upper:
        return "BLOB"
    if any(word in upper for word in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def _postgres_array_type(data_type: pa.DataType) -> str:
    """The array type of an ``unnest`` parameter (typmods are not needed in the cast)."""
    base = _postgres_type(data_type)
    return ("numeric" if base.startswith("numeric") else base) + "[]"


@dataclass(frozen=True)
class Dialect:
    """One SQL dialect: identifiers, column types, and stored values."""

    name: str
    column_type: Callable[[pa.DataType], str]
    value: Callable[[pa.DataType], Callable[[Any], Any] | None]
    #: What a declared column type means, for comparing an existing table's column with the expected one.
    canonical: Callable[[str], str] = str.lower
    #: How a stored value reads back as the Python value of its Arrow type; None = as it is.
    read: Callable[[pa.DataType], Callable[[Any], Any] | None] = lambda _type: None

    def quote(self, identifier: str) -> str:
        return '"' + identifier.replace('"', '""') + '"'

    def sql_type(self, output: str, field: pa.Field) -> str:
        try:
            return self.column_type(field.type)
        except TypeError:
            raise UnsupportedColumnType(output, field.name, str(field.type)) from None

    def columns(self, table: pa.Table) -> list[list[Any]]:
        """The table's values column by column, as the database stores them."""
        converted = []
        for field, column in zip(table.schema, table.columns, strict=True):
            values = column.to_pylist()
            convert = self.value(field.type)
            converted.append([convert(v) for v in values] if convert is not None else values)
        return converted


SQLITE = Dialect("sqlite", _sqlite_type, _sqlite_value, _sqlite_affinity, _sqlite_read)
POSTGRES = Dialect("postgres", _postgres_type, lambda _type: None)
postgres_array_type = _postgres_array_type

__all__ = ["POSTGRES", "SQLITE", "Dialect", "postgres_array_type"]
