"""The open batch: records consumed since the last database commit, per partition."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from onceflow.consumer.exceptions import UndecodableResult
from onceflow.consumer.model import ResultRow
from onceflow.consumer.store import PartitionBatch, ResultBatch
from onceflow.core.avro import IP_COUNT_SERDE
from onceflow.core.errors import SerializationError


@dataclass
class _PartitionRecords:
    first_offset: int
    next_offset: int
    consumed: int = 0
    rows: list[ResultRow] = field(default_factory=list)


class PendingBatch:
    """Decoded records not yet applied, in offset order per partition.

    ``add`` raises :class:`UndecodableResult` for a record that is not an IpCount, unless
    ``skip_undecodable``: then the record only moves the partition's next offset (and is counted).
    """

    def __init__(self, topic: str, *, skip_undecodable: bool = False) -> None:
        self.topic = topic
        self.skip_undecodable = skip_undecodable
        self._parts: dict[int, _PartitionRecords] = {}
        self._records = 0
        self._opened: float | None = None
        self.undecodable = 0

    @property
    def records(self) -> int:
        """Records consumed into the batch (decoded or skipped)."""
        return self._records

    def age_ms(self) -> float:
        """Milliseconds since the batch's first record (0 when empty)."""
        return 0.0 if self._opened is None else (time.monotonic() - self._opened) * 1000

    def add(self, partition: int, offset: int, value: bytes | None) -> bool:
        """Add one consumed record; False when it was skipped as undecodable."""
        part = self._parts.get(partition)
        if part is None:
            part = self._parts[partition] = _PartitionRecords(first_offset=offset, next_offset=offset + 1)
        part.next_offset = offset + 1
        part.consumed += 1
        self._records += 1
        if self._opened is None:
            self._opened = time.monotonic()
        try:
            record = IP_COUNT_SERDE.decode(value or b"")
        except SerializationError as exc:
            if not self.skip_undecodable:
                raise UndecodableResult(self.topic, partition, offset, str(exc)) from exc
            self.undecodable += 1
            return False
        part.rows.append(ResultRow(record["window_start"], record["window_end"], record["ip"], record["count"]))
        return True

    def partitions(self) -> list[int]:
        return sorted(self._parts)

    def offset_ranges(self) -> dict[int, tuple[int, int]]:
        """``[first, next)`` consumed per partition, for logs."""
        return {p: (r.first_offset, r.next_offset) for p, r in sorted(self._parts.items())}

    def drop(self, partitions: set[int]) -> None:
        """Forget the records of ``partitions`` (lost to another instance)."""
        for partition in partitions:
            part = self._parts.pop(partition, None)
            if part is not None:
                self._records -= part.consumed
        if not self._parts:
            self.clear()

    def clear(self) -> None:
        self._parts.clear()
        self._records = 0
        self._opened = None

    def to_batch(self, group: str, owner: str, expected: dict[int, int | None]) -> ResultBatch:
        """The batch to apply; ``expected`` holds each partition's stored next offset (None: none stored)."""
        return ResultBatch(
            group=group,
            topic=self.topic,
            owner=owner,
            partitions=tuple(
                PartitionBatch(p, expected.get(p), r.next_offset, tuple(r.rows)) for p, r in sorted(self._parts.items())
            ),
        )
