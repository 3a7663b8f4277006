"""Load a micro-batch's staged files into the rows a sink writes."""

from __future__ import annotations

from collections.abc import Sequence

from onceflow.core.avro import IpCount
from onceflow.core.staging import StagedFile, read_staged

RowKey = tuple[int, str]


def load_batch(files: Sequence[StagedFile]) -> list[IpCount]:
    """Every row of ``files`` (each verified, see :func:`read_staged`), one per (window_start, ip).

    Rows are update-mode results: a later row for a key replaces an earlier one (file order, then
    row order), just as a later batch's row replaces the stored count. The result is sorted by key,
    so sinks that lock rows do so in one global order.
    """
    latest: dict[RowKey, IpCount] = {}
    for file in files:
        for row in read_staged(file):
            latest[(row["window_start"], row["ip"])] = row
    return [latest[key] for key in sorted(latest)]
