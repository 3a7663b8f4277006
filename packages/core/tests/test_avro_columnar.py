"""``encode_table`` writes byte for byte what fastavro writes, row by row, for every type it covers,
every null and edge value; and declines (None) every shape it does not cover, so the caller's
fastavro path encodes it or names what is wrong."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc
import pytest

from onceflow.core.avro import SingleObjectSerde
from onceflow.core.avro.arrow import avro_rows, avro_schema
from onceflow.core.avro.columnar import encode_table
from onceflow.core.errors import SerializationError

AT = dt.datetime(2026, 11, 24, 1, 2, 3, 456789, tzinfo=dt.UTC)
INT64 = [0, 1, -1, 63, 64, -64, -65, 2**31 - 1, -(2**31), 2**62, 2**63 - 1, -(2**63)]


def _both(table: pa.Table, schema: dict[str, Any] | None = None) -> tuple[list[bytes] | None, list[bytes]]:
    schema = schema or avro_schema(table.schema, "test.Row")
    serde: SingleObjectSerde[dict[str, Any]] = SingleObjectSerde(schema, logical_types=True)
    return encode_table(table, schema, serde.header), [serde.encode(row) for row in avro_rows(table)]


def _assert_same(table: pa.Table) -> None:
    columnar, fastavro = _both(table)
    assert columnar is not None, "the shape should be covered"
    assert columnar == fastavro


def test_the_ip_count_shape_encodes_as_fastavro() -> None:
    rows = 2_000
    start = 1_795_000_000_000
    table = pa.table(
        {
            "window_start": pa.array([start + 5_000 * (i % 7) for i in range(rows)], pa.int64()),
            "window_end": pa.array([start + 5_000 * (i % 7 + 1) for i in range(rows)], pa.int64()),
            "ip": pa.array([f"10.{i % 256}.{i // 256}.{i % 13}" for i in range(rows)]),
            "count": pa.array([i * 37 % 100_000 for i in range(rows)], pa.int64()),
        }
    )
    _assert_same(table)


@pytest.mark.parametrize("nullable", [False, True])
def test_integers_at_every_varint_width_and_sign(nullable: bool) -> None:
    values: list[int | None] = [*INT64, *(2**k for k in range(63)), *(-(2**k) for k in range(64))]
    if nullable:
        values = [v if i % 3 else None for i, v in enumerate(values)]
    small = [v if v is None or -(2**31) <= v < 2**31 else 0 for v in values]
    tiny = [v if v is None or -128 <= v < 128 else 1 for v in values]
    table = pa.table(
        {
            "long": pa.array(values, pa.int64()),
            "int": pa.array(small, pa.int32()),
            "short": pa.array(tiny, pa.int8()),
        }
    )
    assert table.schema.field("long").nullable  # Arrow fields are nullable unless declared otherwise
    _assert_same(table)


def test_floats_doubles_booleans_and_specials() -> None:
    doubles = [0.0, -0.0, 1.5, -2.25, 1e308, 5e-324, math.inf, -math.inf, math.nan, None, 0.1]
    table = pa.table(
        {
            "d": pa.array(doubles, pa.float64()),
            "f": pa.array(doubles, pa.float64()).cast(pa.float32(), safe=False),
            "ok": pa.array([True, False, None, True, False, True, None, False, True, True, False]),
        }
    )
    _assert_same(table)


def test_strings_and_bytes_of_every_length_utf8_and_empty() -> None:
    rng = random.Random(7)
    texts: list[str | None] = ["", "a", "ü", "日本語", "🙂" * 40, "x" * 127, "y" * 128, "z" * 20_000, None, ""]
    texts += ["".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(0, 300))) for _ in range(200)]
    blobs = [None if t is None else t.encode() + bytes([rng.randrange(256)]) for t in texts]
    table = pa.table(
        {"s": pa.array(texts), "b": pa.array(blobs, pa.binary()), "ls": pa.array(texts, pa.large_string())}
    )
    _assert_same(table)


def test_a_sliced_table_of_several_chunks_encodes_its_own_rows() -> None:
    texts = [f"row-{i}-" + "v" * (i % 50) for i in range(300)]
    chunked = pa.concat_tables(
        [
            pa.table({"s": pa.array(texts[:100]), "n": pa.array(range(100))}),
            pa.table({"s": pa.array(texts[100:]), "n": pa.array(range(100, 300))}),
        ]
    )
    _assert_same(chunked.slice(37, 200))


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("tz", ["UTC", "Europe/Paris", None])
def test_timestamps_and_dates(unit: str, tz: str | None) -> None:
    values = [AT, AT + dt.timedelta(days=-30_000), dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=dt.UTC), None]
    if tz is None:
        values = [v.replace(tzinfo=None) if v is not None else None for v in values]
    column = pa.array(values, pa.timestamp("us", tz="UTC" if tz else None)).cast(pa.timestamp(unit, tz=tz), safe=False)
    days = pa.array([dt.date(2026, 11, 24), dt.date(1901, 1, 1), dt.date(9999, 12, 31), None], pa.date32())
    _assert_same(pa.table({"at": column, "day": days}))


def test_the_writer_schema_decides_the_field_order_and_the_unions() -> None:
    """A binding's declared schema may list the fields in another order than the table, and declare a
    column nullable that the table holds without nulls."""
    table = pa.table({"b": pa.array([1, 2], pa.int64()), "a": pa.array(["x", "y"])})
    schema = {
        "type": "record",
        "name": "Row",
        "fields": [{"name": "a", "type": ["null", "string"], "default": None}, {"name": "b", "type": "long"}],
    }
    columnar, fastavro = _both(table, schema)
    assert columnar is not None and columnar == fastavro


def test_an_empty_table_has_no_records() -> None:
    table = pa.table({"n": pa.array([], pa.int64())})
    assert _both(table)[0] == []


@pytest.mark.parametrize(
    ("table", "field_type"),
    [
        (pa.table({"n": pa.array([decimal.Decimal("1.50")], pa.decimal128(5, 2))}), None),  # decimals: fastavro
        (pa.table({"n": pa.array(["7"])}), "long"),  # not the field's type: fastavro names it
        (pa.table({"n": pa.array([1, None], pa.int64())}), "long"),  # a null in a non-null field
        (pa.table({"n": pa.array([1], pa.int64())}), {"type": "array", "items": "long"}),
        (pa.table({"m": pa.array([1], pa.int64())}), "long"),  # the field has no column
    ],
    ids=["decimal", "string-for-long", "null-in-non-null", "array", "missing-column"],
)
def test_shapes_it_does_not_cover_are_left_to_fastavro(table: pa.Table, field_type: Any) -> None:
    schema = avro_schema(table.schema, "test.Row")
    if field_type is not None:
        schema["fields"] = [{"name": "n", "type": field_type}]
    assert encode_table(table, schema) is None


def test_fastavro_still_names_what_the_columnar_path_declined() -> None:
    table = pa.table({"n": pa.array([1, None], pa.int64())})
    schema = {"type": "record", "name": "Row", "fields": [{"name": "n", "type": "long"}]}
    serde: SingleObjectSerde[dict[str, Any]] = SingleObjectSerde(schema, logical_types=True)
    assert encode_table(table, schema) is None
    with pytest.raises(SerializationError, match="Row"):
        for row in avro_rows(table):
            serde.encode(row)


def test_a_null_string_with_bytes_in_its_slot_writes_nothing() -> None:
    """Arrow lets a null's slot of a string array hold bytes; they are not the row's value."""
    offsets = pa.py_buffer(np.array([0, 3, 7, 9], dtype=np.int32).tobytes())
    validity = pa.py_buffer(np.packbits([1, 0, 1], bitorder="little").tobytes())
    column = pa.Array.from_buffers(pa.string(), 3, [validity, offsets, pa.py_buffer(b"abcjunkxy")], null_count=1)
    assert column.to_pylist() == ["abc", None, "xy"]
    _assert_same(pa.table({"s": column, "n": pa.array([1, None, 3], pa.int64())}))


def test_encoding_a_staged_table_does_not_import_pandas(tmp_path: Path) -> None:
    """pyarrow imports pandas (over a second here) the first time it converts Python objects or calls
    ``to_numpy``: a participant's first prepare must not pay that, so the encoder reads buffers."""
    table = pa.table(
        {
            "n": pa.array([1, None, -(2**40)], pa.int64()),
            "small": pa.array([1, 2, None], pa.int16()),
            "f": pa.array([1.5, None, -0.0], pa.float32()),
            "ok": pa.array([True, None, False]),
            "s": pa.array(["ü", None, ""]),
            "raw": pa.array([b"\x00", None, b""]),
            "day": pa.array([dt.date(2026, 11, 24), None, dt.date(1901, 1, 1)], pa.date32()),
            "at": pa.array([AT, None, AT], pa.timestamp("ns", tz="Europe/Paris")),
        }
    )
    path = tmp_path / "staged.arrow"
    with pa.ipc.new_file(path, table.schema) as writer:
        writer.write_table(table)
    script = textwrap.dedent(
        f"""
        import sys
        import pyarrow.ipc
        from onceflow.core.avro.arrow import avro_schema
        from onceflow.core.avro.columnar import encode_table
        table = pyarrow.ipc.open_file({str(path)!r}).read_all()
        assert len(encode_table(table, avro_schema(table.schema, "test.Row"))) == 3
        print("pandas" in sys.modules)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False", done.stderr
