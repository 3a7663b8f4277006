"""``avro_rows``: the rows the Avro encoder takes, in one Arrow pass, encode to the same bytes as the
Python values would (timestamps of every unit and zone, dates, decimals, nulls)."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest

from onceflow.core.avro import SingleObjectSerde
from onceflow.core.avro.arrow import avro_rows, avro_schema
from onceflow.core.errors import SerializationError

AT = dt.datetime(2026, 11, 24, 1, 2, 3, 456789, tzinfo=dt.UTC)


def _encoded_both_ways(table: pa.Table) -> tuple[list[bytes], list[bytes]]:
    schema = avro_schema(table.schema, "test.Row")
    serde: SingleObjectSerde[dict[str, Any]] = SingleObjectSerde(schema, logical_types=True)
    return [serde.encode(row) for row in avro_rows(table)], [serde.encode(row) for row in table.to_pylist()]


@pytest.mark.parametrize("unit", ["s", "ms", "us"])
@pytest.mark.parametrize("tz", ["UTC", "Europe/Paris", None])
def test_timestamps_encode_as_from_datetimes(unit: str, tz: str | None) -> None:
    values = [AT, AT + dt.timedelta(days=-30_000), dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=dt.UTC), None]
    if tz is None:
        values = [v.replace(tzinfo=None) if v is not None else None for v in values]
    column = pa.array(values, pa.timestamp("us", tz="UTC" if tz else None)).cast(pa.timestamp(unit, tz=tz), safe=False)
    fast, slow = _encoded_both_ways(pa.table({"at": column}))
    assert fast == slow


def test_nanoseconds_are_truncated_to_microseconds() -> None:
    column = pa.array([1_700_000_000_123_456_789], pa.timestamp("ns", tz="UTC"))
    rows = avro_rows(pa.table({"at": column}))
    assert rows == [{"at": 1_700_000_000_123_456}]


def test_every_type_and_null_encodes_as_from_python_values() -> None:
    table = pa.table(
        {
            "name": pa.array(["ü", None]),
            "n": pa.array([2**40, None], pa.int64()),
            "small": pa.array([-7, None], pa.int32()),
            "ratio": pa.array([0.25, None]),
            "price": pa.array([decimal.Decimal("1234.500"), None], pa.decimal128(12, 3)),
            "ok": pa.array([True, None]),
            "raw": pa.array([b"\x00\xff", None]),
            "day": pa.array([dt.date(2026, 11, 24), None], pa.date32()),
            "old": pa.array([dt.date(1901, 1, 1), dt.date(9999, 12, 31)], pa.date32()),
            "at": pa.array([AT, None], pa.timestamp("us", tz="UTC")),
        }
    )
    fast, slow = _encoded_both_ways(table)
    assert fast == slow
    assert avro_rows(table)[0]["day"] == (dt.date(2026, 11, 24) - dt.date(1970, 1, 1)).days


def test_a_timestamp_beyond_what_microseconds_hold_is_refused_naming_the_column() -> None:
    column = pa.array([10**13], pa.timestamp("s", tz="UTC"))  # 10**19 microseconds: more than int64 holds
    with pytest.raises(SerializationError, match="column 'far'"):
        avro_rows(pa.table({"far": column}))
