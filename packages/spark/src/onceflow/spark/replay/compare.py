"""Compare the rows a sink holds with the rows the replay computed, value by value.

Values are compared in a canonical form of their Arrow type, so every storage format compares
alike: timestamps as epoch microseconds (UTC), dates as day numbers, decimals at their scale,
floats to 12 significant digits (6 for float32; a batch sums in another order than a stream).

How rows are matched depends on what the sink keeps:

- **keyed** (an upsert table, or a topic of an update-mode output keyed by its record key): one row
  per key, the last one written wins; missing, extra and different keys are reported;
- **every row** (an append table, a topic of an append-mode output, the dead letters): rows are
  compared as multisets; a row held twice where the replay has it once is a duplicate.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

Canonical = tuple[Any, ...]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _timestamp(value: Any) -> int:
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    if isinstance(value, int):
        return value
    assert isinstance(value, dt.datetime), f"not a timestamp: {value!r}"
    moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def canonical_value(data_type: pa.DataType, value: Any) -> Any:
    """``value`` in the canonical form of ``data_type`` (see the module docstring)."""
    if value is None:
        return None
    t = pa.types
    if t.is_timestamp(data_type):
        return _timestamp(value)
    if t.is_date32(data_type):
        return (value if isinstance(value, dt.date) else dt.date.fromisoformat(value)).toordinal()
    if t.is_decimal128(data_type):
        return decimal.Decimal(str(value)).quantize(decimal.Decimal(1).scaleb(-data_type.scale))
    if t.is_floating(data_type):
        return float(f"{float(value):.{6 if t.is_float32(data_type) else 12}g}")
    if t.is_boolean(data_type):
        return bool(value)
    if t.is_integer(data_type):
        return int(value)
    if t.is_binary(data_type) or t.is_large_binary(data_type):
        return bytes(value)
    return str(value)


def canonical_rows(schema: pa.Schema, rows: Iterable[dict[str, Any]]) -> list[Canonical]:
    """Each row as a tuple of canonical values in ``schema``'s column order."""
    types = [(f.name, f.type) for f in schema]
    return [tuple(canonical_value(t, row.get(name)) for name, t in types) for row in rows]


@dataclass
class RowComparison:
    """How a sink's rows differ from the replay's."""

    matching: int = 0
    missing: int = 0
    extra: int = 0
    different: int = 0
    duplicated: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return not (self.missing or self.extra or self.different or self.duplicated)

    def note(self, text: str, limit: int) -> None:
        if len(self.examples) < limit:
            self.examples.append(text)


def _show(schema: pa.Schema, row: Canonical) -> str:
    return "(" + ", ".join(f"{name}={value!r}" for name, value in zip(schema.names, row, strict=True)) + ")"


def compare_keyed(
    schema: pa.Schema,
    keys: Sequence[str],
    expected: Sequence[Canonical],
    held: Sequence[Canonical],
    *,
    examples: int = 5,
) -> RowComparison:
    """One row per key: the last of ``held`` wins for each key (a topic holds every update)."""
    index = [schema.names.index(k) for k in keys]

    def by_key(rows: Sequence[Canonical]) -> dict[Canonical, Canonical]:
        return {tuple(row[i] for i in index): row for row in rows}

    want, have = by_key(expected), by_key(held)
    result = RowComparison()
    for key, row in want.items():
        got = have.get(key)
        if got is None:
            result.missing += 1
            result.note(f"missing {_show(schema, row)}", examples)
        elif got != row:
            result.different += 1
            result.note(f"different: held {_show(schema, got)}, replay {_show(schema, row)}", examples)
        else:
            result.matching += 1
    for key, row in have.items():
        if key not in want:
            result.extra += 1
            result.note(f"extra {_show(schema, row)}", examples)
    return result


def compare_all(
    schema: pa.Schema, expected: Sequence[Canonical], held: Sequence[Canonical], *, examples: int = 5
) -> RowComparison:
    """Every row counts: the rows as multisets."""
    want, have = Counter(expected), Counter(held)
    result = RowComparison()
    for row, n in want.items():
        got = have.get(row, 0)
        result.matching += min(n, got)
        if got < n:
            result.missing += n - got
            result.note(f"missing {n - got}x {_show(schema, row)}", examples)
        elif got > n:
            result.duplicated += got - n
            result.note(f"held {got}x, replay {n}x: {_show(schema, row)}", examples)
    for row, got in have.items():
        if row not in want:
            result.extra += got
            result.note(f"extra {got}x {_show(schema, row)}", examples)
    return result
