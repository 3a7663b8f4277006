"""Validation and stamping of the records a client sends in one Produce partition.

Only batch headers and CRCs are examined; records are never decoded.
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from onceflow.broker.storage.config import LogConfig
from onceflow.broker.storage.errors import CorruptRecordError, InvalidRecordError, RecordTooLargeError
from onceflow.broker.storage.header import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    TIMESTAMP_TYPE_FLAG,
    BatchHeader,
    parse_header,
    verify_batch,
)


def validate_client_records(
    view: memoryview, config: LogConfig, topic: str, partition: int
) -> list[tuple[int, BatchHeader]]:
    """``(position, header)`` of each batch in ``view``, all checked; raises on the first bad one.

    Checks: magic 2, CRC32C, whole batches only, size <= ``max.message.bytes``, total size <=
    ``segment.bytes``, not a control batch, and ``lastOffsetDelta == recordCount - 1``. Errors name
    the topic-partition.
    """
    where = f"{topic}-{partition}"
    batches: list[tuple[int, BatchHeader]] = []
    position = 0
    try:
        while position < len(view):
            header = parse_header(view, position)
            if header.size > config.max_message_bytes:
                raise RecordTooLargeError(
                    f"{where}: batch of {header.size} bytes exceeds max.message.bytes={config.max_message_bytes}"
                )
            verify_batch(view, position, header)
            if header.is_control:
                raise InvalidRecordError(f"{where}: clients may not write control batches")
            if header.record_count <= 0 or header.last_offset_delta != header.record_count - 1:
                raise InvalidRecordError(
                    f"{where}: lastOffsetDelta {header.last_offset_delta} does not match "
                    f"recordCount {header.record_count}"
                )
            batches.append((position, header))
            position += header.size
    except CorruptRecordError as exc:
        raise exc.for_partition(topic, partition) from None
    if not batches:
        raise CorruptRecordError("empty records", topic_partition=where)
    if len(view) > config.segment_bytes:
        raise RecordTooLargeError(f"{where}: {len(view)} bytes exceed segment.bytes={config.segment_bytes}")
    return batches


def stamp_log_append_time(batch: bytearray, now_ms: int) -> None:
    """Mark a whole batch as LogAppendTime with max timestamp ``now_ms`` and recompute its CRC."""
    attributes = struct.unpack_from(">h", batch, ATTRIBUTES_OFFSET)[0] | TIMESTAMP_TYPE_FLAG
    struct.pack_into(">h", batch, ATTRIBUTES_OFFSET, attributes)
    struct.pack_into(">q", batch, MAX_TIMESTAMP_OFFSET, now_ms)
    struct.pack_into(">I", batch, CRC_OFFSET, crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:]))
