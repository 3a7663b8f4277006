"""The ``.index`` file: sparse map from a batch's base offset to its byte position in the segment.

Entries are 8 bytes, big-endian: offset relative to the segment base (int32), position (int32), as in
Kafka. An entry is added at most every ``index.interval.bytes`` of log, always at a batch boundary, so
a lookup is a bisect followed by a short forward scan of batch headers.
"""

from __future__ import annotations

import struct
from typing import ClassVar

from onceflow.broker.storage.sparse_index import SparseIndex


class OffsetIndex(SparseIndex):
    """Absolute base offset -> position of the batch starting there."""

    ENTRY: ClassVar[struct.Struct] = struct.Struct(">ii")

    def _encode(self, key: int, value: int) -> bytes:
        return self.ENTRY.pack(key - self.base_offset, value)

    def _decode(self, raw: tuple[int, ...]) -> tuple[int, int]:
        return raw[0] + self.base_offset, raw[1]

    def position_for(self, offset: int) -> int:
        """Position of the last indexed batch whose base offset is <= ``offset`` (0 if none)."""
        entry = self.floor(offset)
        return 0 if entry is None else entry[1]
