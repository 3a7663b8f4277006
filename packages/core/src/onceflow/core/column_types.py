"""The column types onceflow stores, one kind per Arrow type: what every sink and serde names.

A Spark output column arrives as Arrow. :func:`column_kind` sorts its type into one of
:data:`KINDS` (or None: not stored anywhere); each sink, serde and table format then names the
kinds in a table of its own and looks a column up with :func:`type_name`, so every place that
maps types agrees on which Arrow types there are.

==============  ===================================
kind            Arrow types
==============  ===================================
string          string, large_string
int8 .. int64   int8, int16, int32, int64
float32         float32
float64         float64
decimal         decimal128(p, s)
boolean         bool
binary          binary, large_binary
date            date32
timestamp       timestamp without a time zone
timestamp_tz    timestamp with a time zone
==============  ===================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

import pyarrow as pa

T = TypeVar("T")

KINDS = (
    "string", "int8", "int16", "int32", "int64", "float32", "float64",
    "decimal", "boolean", "binary", "date", "timestamp", "timestamp_tz",
)  # fmt: skip

#: The kinds of the types :func:`column_kind` recognises by equality (the rest have parameters).
_EXACT: dict[pa.DataType, str] = {
    pa.string(): "string",
    pa.large_string(): "string",
    pa.int8(): "int8",
    pa.int16(): "int16",
    pa.int32(): "int32",
    pa.int64(): "int64",
    pa.float32(): "float32",
    pa.float64(): "float64",
    pa.bool_(): "boolean",
    pa.binary(): "binary",
    pa.large_binary(): "binary",
    pa.date32(): "date",
}


def column_kind(data_type: pa.DataType) -> str | None:
    """The kind of ``data_type`` (one of :data:`KINDS`), or None when no sink stores it."""
    if pa.types.is_decimal128(data_type):
        return "decimal"
    if pa.types.is_timestamp(data_type):
        return "timestamp_tz" if data_type.tz else "timestamp"
    return _EXACT.get(data_type)


def type_name(data_type: pa.DataType, names: Mapping[str, T | Callable[[pa.DataType], T]]) -> T:
    """What ``names`` (kind -> a name, or a function of the type for parametrised ones such as
    decimals) calls ``data_type``; TypeError naming the type when its kind is not in ``names``."""
    kind = column_kind(data_type)
    if kind is None or kind not in names:
        raise TypeError(str(data_type))
    name = names[kind]
    return name(data_type) if callable(name) else name


def decimal_name(template: str) -> Callable[[pa.DataType], str]:
    """A decimal's name from ``template`` with ``{precision}`` and ``{scale}`` (``"numeric({precision},{scale})"``)."""
    return lambda data_type: template.format(precision=data_type.precision, scale=data_type.scale)
