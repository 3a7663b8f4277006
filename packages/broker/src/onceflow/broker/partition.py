"""A partition as the protocol layer serves it: a :class:`PartitionLog` plus the broker's clock,
isolation levels and upkeep.

Guarantees: reads with ``read_committed`` never return a batch at or beyond the last stable offset;
every call goes straight to the storage layer on the event loop thread (PartitionLog is not
thread-safe), so operations on one partition are totally ordered.
"""

from __future__ import annotations

import time
from pathlib import Path

from onceflow.broker.storage.config import LogConfig
from onceflow.broker.storage.errors import OffsetOutOfRangeError
from onceflow.broker.storage.partition_log import AppendInfo, PartitionLog
from onceflow.core.logging import get_logger

log = get_logger("onceflow.broker.partition")


def now_ms() -> int:
    """Wall-clock milliseconds, the time base of Kafka timestamps."""
    return time.time_ns() // 1_000_000


class Partition:
    """One open topic-partition (see module docs)."""

    def __init__(self, partition_log: PartitionLog, topic: str, index: int) -> None:
        self.log = partition_log
        self.topic = topic
        self.index = index

    @classmethod
    def open(cls, directory: Path, topic: str, index: int, config: LogConfig) -> Partition:
        """Open (or create) the log in ``directory``, recovering it if needed."""
        directory.mkdir(parents=True, exist_ok=True)
        return cls(PartitionLog.open(directory, topic, index, config, now_ms=now_ms()), topic, index)

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.log.last_stable_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    def append(self, records: bytes) -> AppendInfo:
        """Append one Produce partition's batches (all or nothing; storage errors propagate)."""
        return self.log.append(records, now_ms=now_ms())

    def check_offset(self, offset: int) -> None:
        """Raise OffsetOutOfRangeError unless ``offset`` is within ``[log_start, high_watermark]``."""
        if not self.log.log_start_offset <= offset <= self.log.high_watermark:
            raise OffsetOutOfRangeError(
                f"{self.log.topic_partition}: offset {offset} outside "
                f"[{self.log.log_start_offset}, {self.log.high_watermark}]"
            )

    def read(self, offset: int, max_bytes: int, *, read_committed: bool, min_one_batch: bool) -> bytes:
        """Stored batches from ``offset``: up to ``max_bytes``, or one whole batch if ``min_one_batch``."""
        max_offset = self.log.last_stable_offset if read_committed else None
        if not min_one_batch:
            self.check_offset(offset)
            data = self.log.read(offset, max_bytes, max_offset=max_offset)
            return data if len(data) <= max_bytes else b""
        return self.log.read(offset, max_bytes, max_offset=max_offset)

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the first record at or after ``timestamp_ms``, or None."""
        found = self.log.offset_for_timestamp(timestamp_ms)
        return None if found is None else (found[1], found[0])

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the record with the largest timestamp, or None if empty."""
        best: tuple[int, int] | None = None
        for segment in self.log.segments:
            if segment.max_timestamp >= 0 and (best is None or segment.max_timestamp > best[0]):
                best = (segment.max_timestamp, segment.offset_of_max_timestamp)
        return best

    def flush(self) -> None:
        """fsync the active segment."""
        self.log.flush()

    def enforce_retention(self) -> None:
        """Apply retention and compaction, and expire idle producers."""
        now = now_ms()
        self.log.apply_retention(now)
        self.log.compact(now)
        self.log.expire_producers(now)

    def snapshot(self) -> None:
        """Write a producer-state snapshot at the log end offset."""
        self.log.snapshot_producer_state(self.log.log_end_offset)

    def close(self) -> None:
        """Snapshot, fsync and close."""
        self.log.close()

    def delete(self) -> None:
        """Close the log and remove its directory."""
        self.log.delete()
