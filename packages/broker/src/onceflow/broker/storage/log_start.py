"""The log start offset of a partition, where DeleteRecords moved it (Kafka's log-start-offset-checkpoint).

Retention deletes whole segments, so the first segment's base offset is the log start offset. A
DeleteRecords may move it into the middle of a segment, which then cannot be cut: the offset is kept
in ``log-start-offset`` in the partition's directory instead, written atomically (temp file, fsync,
rename, directory fsync) before the move is answered, and read back on open. The log start offset
is the larger of the two; whole segments below it are deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from onceflow.core.fsync import replace_durably

FILE = "log-start-offset"


class _Segment(Protocol):
    @property
    def next_offset(self) -> int: ...


def load(directory: Path, first_base: int, log_end: int) -> int:
    """The durable log start offset, clamped to ``[first_base, log_end]`` (``first_base`` without a file)."""
    try:
        stored = int((directory / FILE).read_text().strip())
    except (FileNotFoundError, ValueError):
        return first_base
    return min(max(stored, first_base), log_end)


def store(directory: Path, offset: int) -> None:
    """Make ``offset`` the durable log start offset; raises OSError and then changes nothing."""
    replace_durably(directory / FILE, f"{offset}\n".encode())


def whole_segments_below(segments: Sequence[_Segment], offset: int) -> int:
    """How many leading segments lie entirely below ``offset`` (never the active, last one)."""
    count = 0
    for segment in segments[:-1]:
        if segment.next_offset > offset:
            break
        count += 1
    return count
