"""A JSON record's row fits its declared columns exactly when Arrow converts it: the Python checks
of the common values agree with Arrow on every type and edge value, and Arrow answers the rest."""

from __future__ import annotations

import datetime as dt
import decimal
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from onceflow.consumer.tables import decode
from onceflow.consumer.tables.columns import TYPE_NAMES, parse_column_type
from onceflow.consumer.tables.decode import RowFit

UTC = dt.UTC
CANDIDATES: list[Any] = [
    *(sign * ((1 << bits) + delta) for bits in (7, 8, 15, 16, 31, 32, 63, 64) for delta in (-1, 0) for sign in (1, -1)),
    0, 1, -1, 1 << 70, -(1 << 70), True, False,
    0.0, 1.5, -2.5, 1e300, float("nan"), float("inf"), 3.0,
    "", "ascii", "é ü 漢字 🙂", "\ud800", "a\udfffb", "1", "true",
    dt.datetime(2026, 1, 1, 12, 30, 15, 123456), dt.datetime(2026, 1, 1, tzinfo=UTC),
    dt.datetime(2026, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=-7))),
    dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31),
    dt.datetime.fromisoformat("0001-01-01T00:00:00+23:59"), dt.datetime.fromisoformat("9999-12-31T23:59:59-23:59"),
    dt.date(2026, 1, 1), dt.date(1, 1, 1),
    b"", b"\x00\xff", bytearray(b"x"),
    decimal.Decimal("1.25"), decimal.Decimal("123456789.123"), decimal.Decimal("NaN"),
    [1], {"a": 1},
]  # fmt: skip


def arrow_accepts(schema: pa.Schema, row: dict[str, Any]) -> bool:
    try:
        pa.RecordBatch.from_pylist([row], schema=schema)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return False
    return True


@pytest.mark.parametrize("type_name", [*TYPE_NAMES, "decimal(10,2)"])
def test_a_row_fits_exactly_when_arrow_converts_it(type_name: str) -> None:
    schema = pa.schema([parse_column_type("t", "c", type_name)])
    fit = RowFit(schema)
    for value in [None, *CANDIDATES]:
        row = {"c": value}
        assert (fit.reason(row) is None) == arrow_accepts(schema, row), f"{type_name}: {value!r}"


def test_a_typical_row_is_answered_without_a_conversion_and_a_misfit_names_the_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    schema = pa.schema(
        [
            parse_column_type("t", "window_start", "timestamp not null"),
            parse_column_type("t", "ip", "string not null"),
            parse_column_type("t", "count", "long not null"),
            parse_column_type("t", "ratio", "double"),
            parse_column_type("t", "day", "date"),
            parse_column_type("t", "raw", "binary"),
            parse_column_type("t", "ok", "boolean"),
        ]
    )
    fit = RowFit(schema)
    typical = {
        "window_start": dt.datetime(2026, 1, 1, tzinfo=UTC), "ip": "10.0.0.1", "count": 3, "ratio": None,
        "day": dt.date(2026, 1, 1), "raw": b"\x01", "ok": True,
    }  # fmt: skip
    assert "too large" in str(fit.reason({**typical, "count": 1 << 64}))
    assert "surrogates" in str(fit.reason({**typical, "ip": "\ud800"}))

    def no_conversion(*args: object, **kwargs: object) -> pa.RecordBatch:
        raise AssertionError("a typical row went through Arrow")

    arrow = SimpleNamespace(RecordBatch=SimpleNamespace(from_pylist=no_conversion), ArrowException=pa.ArrowException)
    monkeypatch.setattr(decode, "pa", arrow)
    assert fit.reason(typical) is None
