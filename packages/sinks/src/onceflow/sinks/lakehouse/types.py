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

import pyarrow as pa

from onceflow.sinks.tables.dialects import Dialect


def _delta_type(data_type: pa.DataType) -> str:
    t = pa.types
    if t.is_string(data_type) or t.is_large_string(data_type):
        return "string"
    names = {pa.int8(): "byte", pa.int16(): "short", pa.int32(): "integer", pa.int64(): "long"}
    names |= {pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean", pa.date32(): "date"}
    if data_type in names:
        return names[data_type]
    if t.is_decimal128(data_type):
        return f"decimal({data_type.precision},{data_type.scale})"
    if t.is_binary(data_type) or t.is_large_binary(data_type):
        return "binary"
    if t.is_timestamp(data_type):
        return "timestamp" if data_type.tz else "timestamp_ntz"
    raise TypeError(str(data_type))


def _iceberg_type(data_type: pa.DataType) -> str:
    t = pa.types
    if t.is_int8(data_type) or t.is_int16(data_type) or t.is_int32(data_type):
        return "int"
    if t.is_timestamp(data_type):
        return "timestamptz" if data_type.tz else "timestamp"
    if t.is_decimal128(data_type):
        return f"decimal({data_type.precision}, {data_type.scale})"
    if t.is_integer(data_type) and not t.is_int64(data_type):
        raise TypeError(str(data_type))
    return _delta_type(data_type).replace("byte", "int")


def _compact(declared: str) -> str:
    return declared.replace(" ", "").lower()


DELTA = Dialect("delta", _delta_type, lambda _type: None, _compact)
ICEBERG = Dialect("iceberg", _iceberg_type, lambda _type: None, _compact)

__all__ = ["DELTA", "ICEBERG"]
