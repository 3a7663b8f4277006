"""ListOffsets by timestamp: the first record at or after a time, found through the time indexes."""

from __future__ import annotations

from collections.abc import Iterable

from onceflow.broker.storage.errors import UnsupportedCompressionError
from onceflow.broker.storage.header import BatchHeader
from onceflow.broker.storage.records import decode_records
from onceflow.broker.storage.segment import LogSegment


def offset_for_timestamp(segments: Iterable[LogSegment], timestamp_ms: int) -> tuple[int, int] | None:
    """``(offset, timestamp)`` of the first record whose timestamp is >= ``timestamp_ms``; None if
    every batch is older. Only the one matching batch is decoded (or, if its codec is unsupported,
    its base offset and max timestamp are returned)."""
    for segment in segments:
        if segment.max_timestamp < timestamp_ms:
            continue
        start = segment.time_index.offset_before(timestamp_ms)
        scan_from = 0 if start is None else segment.offset_index.position_for(start)
        for position, header in segment.headers_from(scan_from):
            if header.max_timestamp >= timestamp_ms:
                return _first_record_at(segment, position, header, timestamp_ms)
    return None


def _first_record_at(segment: LogSegment, position: int, header: BatchHeader, timestamp_ms: int) -> tuple[int, int]:
    try:
        for record in decode_records(segment.read_at(position, header.size)):
            if record.timestamp_ms >= timestamp_ms:
                return record.offset, record.timestamp_ms
    except UnsupportedCompressionError:
        pass
    return header.base_offset, header.max_timestamp
