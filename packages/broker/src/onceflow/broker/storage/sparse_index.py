"""A sparse, append-only, sorted index file of fixed-size ``(key, value)`` entries.

The offset index and the time index are both this structure. Entries live in memory (for bisect) and
are appended to the file with ``os.write``. The file is only a cache of what a log scan can rebuild,
so it is never trusted blindly: :meth:`SparseIndex.load` returns None for a file that is torn,
unsorted or points past the log, and the segment then rebuilds it.
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_right
from pathlib import Path
from typing import ClassVar

from onceflow.broker.storage.index_file import IndexFile


class SparseIndex(IndexFile):
    """Sorted ``key -> value`` entries for one segment; keys are non-decreasing in append order.

    Subclasses fix the on-disk entry layout (``ENTRY``) and how absolute values map to it relative to
    the segment's base offset.
    """

    ENTRY: ClassVar[struct.Struct]

    def __init__(self, path: Path, base_offset: int) -> None:
        super().__init__(path, base_offset)
        self.keys: array[int] = array("q")
        self.values: array[int] = array("q")

    # --- entry codec, defined by subclasses -------------------------------------------------------
    def _encode(self, key: int, value: int) -> bytes:
        raise NotImplementedError

    def _decode(self, raw: tuple[int, ...]) -> tuple[int, int]:
        raise NotImplementedError

    # --- lifecycle ----------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: Path, base_offset: int) -> SparseIndex | None:
        """Read an index file; None if it is missing, torn or unsorted (the caller rebuilds it)."""
        index = cls(path, base_offset)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        if len(data) % cls.ENTRY.size:
            return None
        previous = None
        for raw in cls.ENTRY.iter_unpack(data):
            key, value = index._decode(raw)
            if previous is not None and key < previous:
                return None
            previous = key
            index.keys.append(key)
            index.values.append(value)
        return index

    def rewrite(self, entries: list[tuple[int, int]]) -> None:
        """Replace the file and the in-memory entries with ``entries`` (already sorted)."""
        self.close()
        self.keys = array("q", (k for k, _ in entries))
        self.values = array("q", (v for _, v in entries))
        self.path.write_bytes(b"".join(self._encode(k, v) for k, v in entries))

    def append(self, key: int, value: int) -> None:
        """Append one entry; keys must not decrease."""
        if self._fd is None:
            self._fd = self._open_for_append()
        self.keys.append(key)
        self.values.append(value)
        os.write(self._fd, self._encode(key, value))

    def truncate_to(self, count: int) -> None:
        """Keep only the first ``count`` entries, in memory and in the file (which may hold a torn
        entry of a failed append beyond them)."""
        del self.keys[count:]
        del self.values[count:]
        if self._fd is not None:
            os.ftruncate(self._fd, count * self.ENTRY.size)
        elif self.path.exists():
            os.truncate(self.path, count * self.ENTRY.size)

    # --- queries ------------------------------------------------------------------------------------
    def floor(self, key: int) -> tuple[int, int] | None:
        """The last entry whose key is <= ``key`` (the first such when keys repeat), or None."""
        i = bisect_right(self.keys, key)
        if i == 0:
            return None
        return self.keys[i - 1], self.values[i - 1]

    def last(self) -> tuple[int, int] | None:
        if not self.keys:
            return None
        return self.keys[-1], self.values[-1]

    def __len__(self) -> int:
        return len(self.keys)
