"""Dead-letter records: a line that cannot be parsed goes to the dead-letter topic, whole.

The value is the original bytes; headers carry the reason and the original bytes again (so a
consumer that only reads headers has both), plus where the line came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onceflow.runtime.api.source import SourceRecord

REASON_HEADER = "onceflow.error.reason"
ORIGINAL_HEADER = "onceflow.error.original"
SOURCE_HEADER = "onceflow.source"
OFFSET_HEADER = "onceflow.source.offset"


def dead_letter_record(
    topic: str,
    line: bytes,
    reason: str,
    *,
    source: str,
    line_offset: int,
    source_partition: Mapping[str, Any],
    source_offset: Mapping[str, Any],
) -> SourceRecord:
    return SourceRecord(
        source_partition,
        source_offset,
        topic,
        line,
        None,
        headers=[
            (REASON_HEADER, reason.encode()),
            (ORIGINAL_HEADER, line),
            (SOURCE_HEADER, source.encode()),
            (OFFSET_HEADER, str(line_offset).encode()),
        ],
    )
