"""Durable producer-id allocation for InitProducerId.

Guarantee: a producer id handed out is never handed out again, across restarts and ``kill -9``.
The allocator reserves ids in blocks: the upper bound of the current block is written to a file and
fsynced *before* any id of the block is handed out; on start, allocation resumes at the stored bound.
A crash therefore skips at most one block of ids and never repeats one.
"""

from __future__ import annotations

from pathlib import Path

from onceflow.core.fsync import replace_durably

BLOCK_SIZE = 1000
FILE_NAME = "producer-ids"


class ProducerIdAllocator:
    """Hands out increasing producer ids from fsynced blocks (see module docs)."""

    def __init__(self, data_dir: Path, block_size: int = BLOCK_SIZE) -> None:
        self._path = data_dir / FILE_NAME
        self._block_size = block_size
        self._next = self._read_bound()
        self._reserved_until = self._next

    def _read_bound(self) -> int:
        try:
            text = self._path.read_text().strip()
        except FileNotFoundError:
            return 0
        if not text.isdigit():
            raise ValueError(f"{self._path} is corrupt: expected an integer, found {text[:40]!r}")
        return int(text)

    def _reserve(self) -> None:
        bound = self._next + self._block_size
        # The bound is durable (file and directory fsynced) before any id of the block is handed out.
        replace_durably(self._path, f"{bound}\n".encode(), tmp=self._path.with_suffix(".tmp"))
        self._reserved_until = bound

    def allocate(self) -> int:
        """Return a producer id never returned before by any run of this broker on this data dir."""
        if self._next >= self._reserved_until:
            self._reserve()
        producer_id = self._next
        self._next += 1
        return producer_id
