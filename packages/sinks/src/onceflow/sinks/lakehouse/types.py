"""Column types of the table formats, as :func:`onceflow.sinks.tables.plan_table` compares them.

=====================  ======================  ==========================
Arrow (Spark) type     Delta Lake              Apache Iceberg
=====================  ======================  ==========================
string                 string                  string
int8 / int16 / int32   byte / short / integer  int
int64                  long                    long
float32 / float64      float / double          float / double
decimal128(p, s)       decimal(p,s)            decimal(p, s)
bool                   boolean                 boolean
binary                 binary                  binary
date32                 date                    date
timestamp with tz      timestamp               timestamptz
timestamp without tz   timestamp_ntz           timestamp
=====================  ======================  ==========================

The lakehouse sinks check an existing table with the same rules as the SQL sinks (create it from
the output's schema, add a nullable column the output gained, refuse a missing or differently typed
column naming it); these dialects only name the types.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pyarrow as pa

from onceflow.core.column_types import decimal_name, type_name
from onceflow.sinks.tables.dialects import Dialect

DELTA_TYPES: dict[str, str | Callable[[pa.DataType], str]] = {
    "string": "string",
    "int8": "byte",
    "int16": "short",
    "int32": "integer",
    "int64": "long",
    "float32": "float",
    "float64": "double",
    "decimal": decimal_name("decimal({precision},{scale})"),
    "boolean": "boolean",
    "binary": "binary",
    "date": "date",
    "timestamp": "timestamp_ntz",
    "timestamp_tz": "timestamp",
}
ICEBERG_TYPES: dict[str, str | Callable[[pa.DataType], str]] = {
    **DELTA_TYPES,
    **dict.fromkeys(("int8", "int16", "int32"), "int"),
    "decimal": decimal_name("decimal({precision}, {scale})"),
    "timestamp": "timestamp",
    "timestamp_tz": "timestamptz",
}


def _compact(declared: str) -> str:
    return declared.replace(" ", "").lower()


DELTA = Dialect("delta", partial(type_name, names=DELTA_TYPES), lambda _type: None, _compact)
ICEBERG = Dialect("iceberg", partial(type_name, names=ICEBERG_TYPES), lambda _type: None, _compact)

__all__ = ["DELTA", "ICEBERG"]
