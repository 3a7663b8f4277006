"""The ``.timeindex`` file: sparse map from the largest timestamp seen so far to its batch's offset.

Entries are 12 bytes, big-endian: timestamp (int64), offset relative to the segment base (int32), as
in Kafka. Timestamps strictly increase across entries, so a lookup for time T bisects to the last
entry before T; every batch up to that entry's offset has a max timestamp below T.
"""

from __future__ import annotations

import struct
from typing import ClassVar

from onceflow.broker.storage.sparse_index import SparseIndex


class TimeIndex(SparseIndex):
    """Max timestamp so far -> base offset of the batch that carried it."""

    ENTRY: ClassVar[struct.Struct] = struct.Struct(">qi")

    def _encode(self, key: int, value: int) -> bytes:
        return self.ENTRY.pack(key, value - self.base_offset)

    def _decode(self, raw: tuple[int, ...]) -> tuple[int, int]:
        return raw[0], raw[1] + self.base_offset

    def offset_before(self, timestamp_ms: int) -> int | None:
        """Offset of the last entry whose timestamp is < ``timestamp_ms``, or None."""
        entry = self.floor(timestamp_ms - 1)
        return None if entry is None else entry[1]

    def maybe_append(self, timestamp_ms: int, offset: int) -> None:
        """Append only if ``timestamp_ms`` is larger than the last entry's."""
        last = self.last()
        if last is None or timestamp_ms > last[0]:
            self.append(timestamp_ms, offset)
