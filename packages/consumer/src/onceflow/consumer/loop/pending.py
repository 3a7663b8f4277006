"""The open batch: records consumed since the last database commit, per topic-partition."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from onceflow.consumer.store import PartitionBatch, ResultBatch, TableRow

#: A partition of a stored topic.
TopicPartitionKey = tuple[str, int]


@dataclass
class _PartitionRecords:
    first_offset: int
    next_offset: int
    consumed: int = 0
    rows: list[TableRow] = field(default_factory=list)


class PendingBatch:
    """Rows of consumed records not yet applied, in offset order per topic-partition.

    A skipped record (``row`` None: undecodable) only moves its partition's next offset.
    """

    def __init__(self) -> None:
        self._parts: dict[TopicPartitionKey, _PartitionRecords] = {}
        self._records = 0
        self._opened: float | None = None

    @property
    def records(self) -> int:
        """Records consumed into the batch (stored or skipped)."""
        return self._records

    def age_ms(self) -> float:
        """Milliseconds since the batch's first record (0 when empty)."""
        return 0.0 if self._opened is None else (time.monotonic() - self._opened) * 1000

    def add(self, topic: str, partition: int, offset: int, row: TableRow | None) -> None:
        """Add one consumed record: its row, or None for a record that is skipped."""
        part = self._parts.get((topic, partition))
        if part is None:
            part = self._parts[(topic, partition)] = _PartitionRecords(first_offset=offset, next_offset=offset + 1)
        part.next_offset = offset + 1
        part.consumed += 1
        self._records += 1
        if self._opened is None:
            self._opened = time.monotonic()
        if row is not None:
            part.rows.append(row)

    def partitions(self) -> list[TopicPartitionKey]:
        return sorted(self._parts)

    def offset_ranges(self) -> dict[TopicPartitionKey, tuple[int, int]]:
        """``[first, next)`` consumed per topic-partition, for logs."""
        return {p: (r.first_offset, r.next_offset) for p, r in sorted(self._parts.items())}

    def drop(self, partitions: set[TopicPartitionKey]) -> None:
        """Forget the records of ``partitions`` (lost to another instance)."""
        for key in partitions:
            part = self._parts.pop(key, None)
            if part is not None:
                self._records -= part.consumed
        if not self._parts:
            self.clear()

    def clear(self) -> None:
        self._parts.clear()
        self._records = 0
        self._opened = None

    def to_batch(self, group: str, owner: str, expected: dict[TopicPartitionKey, int | None]) -> ResultBatch:
        """The batch to apply; ``expected`` holds each partition's stored next offset (None: none stored)."""
        return ResultBatch(
            group=group,
            owner=owner,
            partitions=tuple(
                PartitionBatch(topic, p, expected.get((topic, p)), r.next_offset, tuple(r.rows))
                for (topic, p), r in sorted(self._parts.items())
            ),
        )
