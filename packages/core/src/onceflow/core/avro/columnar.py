"""Avro binary records of a whole Arrow table at once, column by column (the Kafka sink's hot path).

fastavro encodes one record per call, from a Python dict per row: for a batch of thousands of small
records the per-row Python work costs more than the encoding. :func:`encode_table` writes the same
bytes for every row in a few NumPy passes per column:

1. each column becomes what its Avro type stores (:func:`~onceflow.core.avro.arrow.avro_storage`:
   timestamps as epoch microseconds, dates as epoch days), with its nulls and its per-row sizes:
   a zig-zag varint for ``int``, ``long`` and the union branch of a nullable field (``["null", T]``:
   0 for null, 1 for the value), 4 or 8 little-endian bytes for ``float`` and ``double``, 1 byte for
   ``boolean``, a varint length and the bytes for ``string`` and ``bytes``;
2. each row's size is the header's plus its fields' sizes, and one buffer holds every row back to
   back;
3. each column scatters its bytes to its rows' cursors, in the schema's field order.

It covers the record schemas :func:`~onceflow.core.avro.arrow.avro_schema` derives, except
decimals: for any other shape (a decimal, a column whose Arrow type is not the field's, a null in a
field that is not nullable) it returns None and the caller encodes with fastavro, which also names
what is wrong. The tests compare its bytes with fastavro's for every type, null and edge value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa

from onceflow.core.avro.arrow import avro_storage

#: A varint of a 64-bit zig-zag value takes at most 10 bytes.
_MAX_VARINT: Final = 10
_VARINT_LIMITS: Final = [np.uint64(1 << (7 * k)) for k in range(1, _MAX_VARINT)]


@dataclass(frozen=True, slots=True)
class _Column:
    """One field's bytes for every row: ``sizes`` per row, and how to write them (``write(out, cursors)``)."""

    sizes: np.ndarray
    write: Callable[[np.ndarray, np.ndarray], None]


def encode_table(table: pa.Table, schema: Mapping[str, Any], header: bytes = b"") -> list[bytes] | None:
    """``header`` + the Avro binary encoding of each row of ``table`` under the record ``schema``
    (field values by column name), or None when :func:`encode_table` does not cover the shape."""
    rows = table.num_rows
    columns: list[_Column] = []
    for field in schema.get("fields", ()):
        name = field["name"]
        if name not in table.column_names:
            return None
        column = _field_column(table.schema.field(name), table.column(name).combine_chunks(), field["type"], rows)
        if column is None:
            return None
        columns.append(column)
    # Step 2
    sizes = np.full(rows, len(header), dtype=np.int64)
    for column in columns:
        sizes += column.sizes
    ends = np.cumsum(sizes)
    starts = ends - sizes
    out = np.empty(int(ends[-1]) if rows else 0, dtype=np.uint8)
    for k, byte in enumerate(header):
        out[starts + k] = byte
    # Step 3
    cursors = starts + len(header)
    for column in columns:
        column.write(out, cursors)
        cursors += column.sizes
    data = out.tobytes()
    return [data[start:end] for start, end in zip(starts.tolist(), ends.tolist(), strict=True)]


def _field_column(field: pa.Field, array: pa.Array, avro_type: Any, rows: int) -> _Column | None:
    """Step 1 for one field, or None when it is not covered."""
    nullable = isinstance(avro_type, list)
    if nullable:
        if len(avro_type) != 2 or avro_type[0] != "null":
            return None
        avro_type = avro_type[1]
    kind = _kind(avro_type)
    if kind is None:
        return None
    valid = _valid(array, rows)
    if not nullable and not valid.all():
        return None  # fastavro names the field that holds a null
    value = _value_column(kind, field, array, valid, rows)
    if value is None or not nullable:
        return value
    branch = np.where(valid, 2, 0).astype(np.uint8)  # zig-zag of the union index: null 0, value 1

    def write(out: np.ndarray, cursors: np.ndarray) -> None:
        out[cursors] = branch
        value.write(out, cursors + 1)

    return _Column(value.sizes + 1, write)


def _kind(avro_type: Any) -> str | None:
    """The Avro type a column is written as: a primitive name, ``int``/``long`` for dates and
    timestamps; None for anything else (decimals, named or complex types)."""
    if isinstance(avro_type, dict):
        logical = avro_type.get("logicalType")
        base = avro_type.get("type")
        if (logical, base) in (("date", "int"), ("timestamp-micros", "long")):
            return str(base)
        return None
    if avro_type in ("int", "long", "float", "double", "boolean", "string", "bytes"):
        return str(avro_type)
    return None


def _valid(array: pa.Array, rows: int) -> np.ndarray:
    """Which rows hold a value (read from the validity bitmap)."""
    if array.null_count == 0:
        return np.ones(rows, dtype=bool)
    return _bits(array.buffers()[0], array.offset, rows)


def _bits(buffer: pa.Buffer, offset: int, rows: int) -> np.ndarray:
    """``rows`` bits of an Arrow bitmap from bit ``offset``, as booleans."""
    packed = np.frombuffer(buffer, dtype=np.uint8)
    return np.unpackbits(packed, bitorder="little")[offset : offset + rows].astype(bool)


def _fixed_values(array: pa.Array, dtype: str) -> np.ndarray:
    """The values of a fixed-width ``array`` as a NumPy view of its data buffer (a null's slot holds
    whatever is there; the callers write nothing for it). Arrow's buffers, not ``to_numpy``, which
    imports pandas on first use: a participant must not pay that inside a prepare."""
    return np.frombuffer(array.buffers()[1], dtype=np.dtype(dtype))[array.offset : array.offset + len(array)]


def _value_column(kind: str, field: pa.Field, array: pa.Array, valid: np.ndarray, rows: int) -> _Column | None:
    """The value bytes of one column (nulls write nothing), if its Arrow type is the Avro type's."""
    data_type = array.type
    t = pa.types
    if kind in ("int", "long"):
        if not (t.is_integer(data_type) or t.is_timestamp(data_type) or t.is_date32(data_type)):
            return None
        if t.is_uint64(data_type):
            return None  # beyond a long: fastavro decides
        stored = avro_storage(field, pa.chunked_array([array], type=data_type)).combine_chunks()
        return _varint_column(_fixed_values(stored.cast(pa.int64()), "<i8"), valid)
    if kind in ("float", "double"):
        if not (t.is_floating(data_type) or t.is_integer(data_type)) or t.is_float16(data_type):
            return None
        doubles = _fixed_values(array.cast(pa.float64(), safe=False), "<f8")
        values = doubles.astype("<f4") if kind == "float" else doubles
        return _fixed_column(values.view(np.uint8).reshape(rows, values.itemsize), valid)
    if kind == "boolean":
        if not t.is_boolean(data_type):
            return None
        flags = _bits(array.buffers()[1], array.offset, rows).astype(np.uint8)
        return _fixed_column(flags.reshape(rows, 1), valid)
    if kind == "string" and (t.is_string(data_type) or t.is_large_string(data_type)):
        return _bytes_column(array.cast(pa.large_binary()), valid)
    if kind == "bytes" and (t.is_binary(data_type) or t.is_large_binary(data_type)):
        return _bytes_column(array.cast(pa.large_binary()), valid)
    return None


def _varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints of int64 ``values``: (sizes, groups), groups[k] the k-th byte of every value."""
    zigzag = ((values << 1) ^ (values >> 63)).view(np.uint64)
    sizes = np.ones(len(values), dtype=np.int64)
    for limit in _VARINT_LIMITS:
        sizes += zigzag >= limit
    widest = int(sizes.max()) if len(values) else 0
    groups = []
    for k in range(widest):
        group = ((zigzag >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        groups.append(np.where(sizes > k + 1, group | 0x80, group).astype(np.uint8))
    return sizes, np.array(groups, dtype=np.uint8).reshape(widest, len(values))


def _varint_column(values: np.ndarray, valid: np.ndarray) -> _Column:
    sizes, groups = _varints(values)
    sizes = np.where(valid, sizes, 0)

    def write(out: np.ndarray, cursors: np.ndarray) -> None:
        for k, group in enumerate(groups):
            rows = sizes > k
            out[cursors[rows] + k] = group[rows]

    return _Column(sizes, write)


def _fixed_column(octets: np.ndarray, valid: np.ndarray) -> _Column:
    """A fixed number of bytes per value (``octets``: rows x width)."""
    width = octets.shape[1]

    def write(out: np.ndarray, cursors: np.ndarray) -> None:
        at = cursors[valid]
        for k in range(width):
            out[at + k] = octets[valid, k]

    return _Column(np.where(valid, width, 0).astype(np.int64), write)


def _bytes_column(array: pa.Array, valid: np.ndarray) -> _Column:
    """A varint length, then the bytes (``array``: large_binary; a null writes nothing, whatever its slot)."""
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + len(array) + 1]
    lengths = np.where(valid, np.diff(offsets), 0)
    prefix = _varint_column(lengths, valid)
    data = array.buffers()[2]
    payload = np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, np.uint8)
    total = int(lengths.sum())
    # byte j of the values, in row order: where it comes from, and its place within its value
    within = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    source = np.repeat(offsets[:-1], lengths) + within

    def write(out: np.ndarray, cursors: np.ndarray) -> None:
        prefix.write(out, cursors)
        if total:
            out[np.repeat(cursors + prefix.sizes, lengths) + within] = payload[source]

    return _Column(prefix.sizes + lengths, write)
