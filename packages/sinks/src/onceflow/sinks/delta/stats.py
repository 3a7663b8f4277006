"""Delta Lake file statistics (``numRecords``, ``nullCount``, ``minValues``/``maxValues``) of a batch's rows.

Readers use them to skip files, so a wrong bound would hide rows: bounds are written only where
Delta's JSON form is exact and unambiguous (integers, dates, strings up to :data:`MAX_STRING_STAT`
characters); floats (NaN), decimals and timestamps (millisecond truncation) get counts only.
"""

from __future__ import annotations

import json
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

#: Longer strings get no bounds (Delta writers truncate them; an exact bound or none is safer).
MAX_STRING_STAT: Final = 64


def _bounds(column: pa.ChunkedArray) -> tuple[Any, Any] | None:
    t = pa.types
    kind = column.type
    if column.null_count == len(column) or not (
        t.is_integer(kind) or t.is_date32(kind) or t.is_string(kind) or t.is_large_string(kind)
    ):
        return None
    low, high = (value.as_py() for value in pc.min_max(column).values())
    if t.is_date32(kind):
        return low.isoformat(), high.isoformat()
    if isinstance(low, str) and (len(low) > MAX_STRING_STAT or len(high) > MAX_STRING_STAT):
        return None
    return low, high


def file_stats(rows: pa.Table) -> str:
    """The ``stats`` JSON of a data file holding exactly ``rows``."""
    stats: dict[str, Any] = {"numRecords": rows.num_rows, "nullCount": {}, "minValues": {}, "maxValues": {}}
    for name, column in zip(rows.column_names, rows.columns, strict=True):
        stats["nullCount"][name] = column.null_count
        bounds = _bounds(column) if rows.num_rows else None
        if bounds is not None:
            stats["minValues"][name], stats["maxValues"][name] = bounds
    return json.dumps(stats, separators=(",", ":"))
