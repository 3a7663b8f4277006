"""The ``.txnindex`` file: the aborted transactions whose ABORT marker lies in one segment (KIP-98).

Entries are 34 bytes, big-endian, as in Kafka: version (int16, 0), producer id (int64), first offset
(int64), last offset (int64, the ABORT marker's offset) and the last stable offset right after the
marker (int64). They are appended in marker order, so last offsets strictly increase. A first offset
may lie in an earlier segment: a transaction lives wherever its producer wrote it.

Like the other indexes the file is a cache of what a scan of the log can rebuild: :meth:`load` returns
None for a missing, torn or inconsistent file and recovery rebuilds it. All entries are kept in memory
(a partition aborts rarely), so a Fetch lookup is a bisect plus a short scan and never touches disk.
"""

from __future__ import annotations

import errno
import os
import struct
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from onceflow.broker.storage.index_file import IndexFile
from onceflow.core.fsync import replace_durably
from onceflow.core.logging import get_logger

if TYPE_CHECKING:
    from onceflow.broker.storage.producer_state import CompletedTransaction
    from onceflow.broker.storage.segment import LogSegment

log = get_logger(__name__)

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
_VERSION = 0


class AbortedTransaction(NamedTuple):
    """One element of a read_committed Fetch response's ``aborted_transactions``."""

    producer_id: int
    first_offset: int


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """An index entry: an aborted transaction's data range ``[first_offset, last_offset]`` (the last
    being its ABORT marker) and the partition's last stable offset right after the marker."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    @property
    def fetch_entry(self) -> AbortedTransaction:
        return AbortedTransaction(self.producer_id, self.first_offset)


class TransactionIndex(IndexFile):
    """The aborted transactions completed by markers in one segment, in memory and on disk."""

    def __init__(self, path: Path, base_offset: int, entries: list[AbortedTxn] | None = None) -> None:
        super().__init__(path, base_offset)
        self.entries: list[AbortedTxn] = entries or []
        self._last_offsets = [e.last_offset for e in self.entries]
        self.unwritten = False
        """True after an append failed to reach the file: the file is missing until :meth:`flush`."""

    # --- lifecycle ----------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: Path, base_offset: int) -> TransactionIndex | None:
        """Read an index file; None if it is missing, torn, of an unknown version, unsorted, or has an
        entry that cannot belong to a segment starting at ``base_offset``."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        if len(data) % ENTRY_SIZE:
            return None
        entries: list[AbortedTxn] = []
        previous = base_offset - 1
        for version, producer_id, first, last, lso in _ENTRY.iter_unpack(data):
            if version != _VERSION or producer_id < 0 or not 0 <= first <= last or last <= previous:
                return None
            entries.append(AbortedTxn(producer_id, first, last, lso))
            previous = last
        return cls(path, base_offset, entries)

    def rewrite(self, entries: list[AbortedTxn]) -> None:
        """Atomically replace the file and the in-memory entries with ``entries`` (in marker order)."""
        self.close()
        self.entries = list(entries)
        self._last_offsets = [e.last_offset for e in self.entries]
        data = b"".join(_encode(e) for e in self.entries)
        replace_durably(self.path, data, tmp=self.path.with_name(self.path.name + ".tmp"))
        self.unwritten = False

    def append(self, entry: AbortedTxn) -> None:
        """Record one aborted transaction; its marker must come after every indexed one."""
        if self._last_offsets and entry.last_offset <= self._last_offsets[-1]:
            raise ValueError(f"{self.path}: marker offset {entry.last_offset} is not after {self._last_offsets[-1]}")
        self.entries.append(entry)
        self._last_offsets.append(entry.last_offset)
        if self.unwritten:
            return
        data = _encode(entry)
        try:
            if self._fd is None:
                self._fd = self._open_for_append()
            if os.write(self._fd, data) != len(data):
                raise OSError(errno.ENOSPC, "short write")
        except OSError as exc:
            # The entry is served from memory. The file goes (recovery rebuilds a missing index from
            # the log) until flush() manages to rewrite it whole.
            self.unwritten = True
            self.close()
            self.path.unlink(missing_ok=True)
            log.warning("storage.txn_index_write_failed", path=self.path, reason=repr(str(exc)))

    def append_completed(self, completed: CompletedTransaction | None, first_unstable_offset: int | None) -> None:
        """Index ``completed`` if it was aborted. ``first_unstable_offset`` is the partition's first
        unstable offset once the marker is applied; with it the entry records the stable offset."""
        if completed is None or not completed.aborted:
            return
        after_marker = completed.last_offset + 1
        lso = after_marker if first_unstable_offset is None else min(first_unstable_offset, after_marker)
        self.append(AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset, lso))

    def truncate_from(self, offset: int) -> None:
        """Forget the entries whose marker is at or after ``offset`` (recovery replays them again)."""
        keep = bisect_left(self._last_offsets, offset)
        if keep < len(self.entries):
            self.rewrite(self.entries[:keep])

    def flush(self) -> None:
        """Rewrite the file if an append could not write it (see :meth:`append`), then fsync it if
        it has been appended to through this object. Raises OSError if either fails."""
        if self.unwritten:
            self.rewrite(self.entries)
        super().flush()

    # --- queries ------------------------------------------------------------------------------------
    def collect(self, fetch_offset: int, upper_bound_offset: int, out: list[AbortedTransaction]) -> bool:
        """Add to ``out`` every transaction overlapping ``[fetch_offset, upper_bound_offset)``.

        Returns True when no later segment can hold another one: an entry here recorded a last stable
        offset >= the upper bound, so every transaction starting below the bound had ended by then.
        """
        for entry in self.entries[bisect_left(self._last_offsets, fetch_offset) :]:
            if entry.first_offset < upper_bound_offset:
                out.append(entry.fetch_entry)
            if entry.last_stable_offset >= upper_bound_offset:
                return True
        return False

    def __len__(self) -> int:
        return len(self.entries)


def collect_aborted(
    segments: Iterable[LogSegment], fetch_offset: int, upper_bound_offset: int
) -> list[AbortedTransaction]:
    """The aborted transactions overlapping ``[fetch_offset, upper_bound_offset)`` (Kafka: last offset
    >= fetch offset and first offset < upper bound), looked up in ``segments`` in order; pass them from
    the one containing ``fetch_offset``, since a transaction's entry lies with its marker."""
    found: list[AbortedTransaction] = []
    if upper_bound_offset <= fetch_offset:
        return found
    for segment in segments:
        if segment.next_offset <= fetch_offset:
            continue
        if segment.txn_index.collect(fetch_offset, upper_bound_offset, found):
            break
    return found


def _encode(entry: AbortedTxn) -> bytes:
    return _ENTRY.pack(_VERSION, entry.producer_id, entry.first_offset, entry.last_offset, entry.last_stable_offset)
