"""Output schemas: which Arrow types every sink can store, and the schema's bytes on the wire.

A Spark output column arrives as Arrow (Spark's own Arrow conversion). Every sink maps the types
below; anything else (arrays, maps, structs, intervals, ...) is refused when the job starts, naming
the column, before any batch runs.

==========================  =========================================================
Spark type                  Arrow type
==========================  =========================================================
string                      string / large_string
byte, short, int, long      int8, int16, int32, int64
float, double               float32, float64
decimal(p, s)               decimal128(p, s)
boolean                     bool
binary                      binary / large_binary
date                        date32
timestamp, timestamp_ntz    timestamp[us, tz] / timestamp[us]
==========================  =========================================================
"""

from __future__ import annotations

import pyarrow as pa

from onceflow.core.column_types import column_kind
from onceflow.core.errors import UnsupportedColumnType


def is_supported(data_type: pa.DataType) -> bool:
    """True when every sink can store a column of ``data_type``."""
    return column_kind(data_type) is not None


def check_supported(output: str, schema: pa.Schema) -> None:
    """Raise :class:`UnsupportedColumnType` for the first column no sink can store."""
    for field in schema:
        if not is_supported(field.type):
            raise UnsupportedColumnType(output, field.name, str(field.type))


def schema_to_bytes(schema: pa.Schema) -> bytes:
    """The schema as an Arrow IPC schema message (what ``SinkBinding.arrow_schema`` carries)."""
    return bytes(schema.serialize())


def schema_from_bytes(data: bytes) -> pa.Schema:
    """The inverse of :func:`schema_to_bytes`; ValueError when the bytes are not a schema."""
    try:
        return pa.ipc.read_schema(pa.py_buffer(data))
    except (pa.ArrowInvalid, OSError) as exc:
        raise ValueError(f"not an Arrow IPC schema ({len(data)} bytes): {exc}") from exc
