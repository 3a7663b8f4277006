"""One log segment: ``<base>.log`` plus its sparse ``.index`` and ``.timeindex`` and its ``.txnindex``.

File names are the segment's base offset zero-padded to 20 digits, as in Kafka. The ``.log`` file is
a plain concatenation of v2 batches. Appends go straight to the file with ``os.writev`` (no user-space
buffer), so once :meth:`LogSegment.append` returns the bytes are in the kernel page cache and survive
the death of the process; only a machine crash needs the fsync of :meth:`LogSegment.flush`.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from onceflow.broker.storage.errors import CorruptRecordError, LogWriteError
from onceflow.broker.storage.header import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    batch_lengths,
    parse_header,
)
from onceflow.broker.storage.offset_index import OffsetIndex
from onceflow.broker.storage.segment_scan import verified_batches
from onceflow.broker.storage.time_index import TimeIndex
from onceflow.broker.storage.transaction_index import TransactionIndex
from onceflow.core.logging import get_logger

log = get_logger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

_AppendState = tuple[int, int, int, int, int | None, int, int, int]
"""What an append changes: size, next offset, max timestamp and its offset, first batch timestamp,
bytes since the last index entry, offset-index and time-index entry counts."""


def segment_path(directory: Path, base_offset: int, suffix: str) -> Path:
    """``directory/<base offset, 20 digits><suffix>``."""
    return directory / f"{base_offset:020d}{suffix}"


class AppendedBatch(NamedTuple):
    """Where one batch of an append lands: position relative to the write, offsets, max timestamp."""

    relative_position: int
    size: int
    base_offset: int
    next_offset: int
    max_timestamp: int


class LogSegment:
    """An open segment. Offsets in it lie in ``[base_offset, next_offset)``; gaps are allowed."""

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.path = segment_path(directory, base_offset, LOG_SUFFIX)
        self.offset_index = OffsetIndex(segment_path(directory, base_offset, INDEX_SUFFIX), base_offset)
        self.time_index = TimeIndex(segment_path(directory, base_offset, TIME_INDEX_SUFFIX), base_offset)
        self.txn_index = TransactionIndex(segment_path(directory, base_offset, TXN_INDEX_SUFFIX), base_offset)
        # True when the .txnindex file was missing or unusable: recovery must rebuild it from the log.
        self.txn_index_stale = False
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.first_batch_timestamp: int | None = None
        self._bytes_since_index = 0
        # Entry counts the index files hold when not repairing (see _restore_append_state).
        self._offset_entries = 0
        self._time_entries = 0
        self.needs_repair = False
        """True after a failed append whose rollback failed: appends must :meth:`repair` first."""

    # --- opening ------------------------------------------------------------------------------------
    @classmethod
    def create(cls, directory: Path, base_offset: int, index_interval_bytes: int) -> LogSegment:
        """Create an empty segment, replacing any files left under its name."""
        for suffix in SEGMENT_SUFFIXES:
            segment_path(directory, base_offset, suffix).unlink(missing_ok=True)
        segment = cls(directory, base_offset, index_interval_bytes)
        try:
            segment.offset_index.rewrite([])
            segment.time_index.rewrite([])
            segment.txn_index.path.write_bytes(b"")
        except OSError:
            segment.delete_files()  # no half-created segment is left behind
            raise
        return segment

    @classmethod
    def open_existing(
        cls, directory: Path, base_offset: int, index_interval_bytes: int, *, full_recovery: bool
    ) -> tuple[LogSegment, int]:
        """Open a segment; returns it and the number of torn-tail bytes truncated.

        With ``full_recovery`` every batch's CRC is checked, the file is truncated at the first bad or
        incomplete batch, and both indexes are rebuilt. Otherwise the indexes are loaded, and rebuilt
        (with full recovery) only if missing or inconsistent with the log.

        The ``.txnindex`` is loaded as is. If it is missing or inconsistent, ``txn_index_stale`` is set
        and the partition's recovery rebuilds it (that needs the transactions of earlier segments);
        entries of the active segment beyond its recovered end are left for recovery to truncate.
        """
        segment = cls(directory, base_offset, index_interval_bytes)
        segment.size = os.fstat(segment._fd).st_size
        truncated = segment._recover() if full_recovery or not segment._load_indexes() else 0
        loaded = TransactionIndex.load(segment.txn_index.path, base_offset)
        if loaded is None or (not full_recovery and any(e.last_offset >= segment.next_offset for e in loaded.entries)):
            segment.txn_index_stale = True
        else:
            segment.txn_index = loaded
        return segment, truncated

    def _load_indexes(self) -> bool:
        offsets = OffsetIndex.load(self.offset_index.path, self.base_offset)
        times = TimeIndex.load(self.time_index.path, self.base_offset)
        if not isinstance(offsets, OffsetIndex) or not isinstance(times, TimeIndex):
            return False
        if any(p >= self.size for p in offsets.values[-1:]) or any(k < self.base_offset for k in offsets.keys[:1]):
            return False
        self.offset_index, self.time_index = offsets, times
        start = offsets.position_for(offsets.keys[-1]) if len(offsets) else 0
        last_time = times.last()
        if last_time is not None:
            self.max_timestamp, self.offset_of_max_timestamp = last_time
        try:
            for _pos, header in self.headers_from(start):
                self.next_offset = header.next_offset
                if header.max_timestamp > self.max_timestamp:
                    self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.base_offset
        except CorruptRecordError:
            return False
        if last_time is not None and last_time[1] >= self.next_offset:
            return False
        self._read_first_timestamp()
        return True

    def _recover(self) -> int:
        """Validate every batch, truncate the torn tail, rebuild both indexes; returns bytes removed."""
        self.next_offset = self.base_offset
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        offset_entries: list[tuple[int, int]] = []
        time_entries: list[tuple[int, int]] = []
        since_index = 0
        valid_end = 0
        try:
            for pos, header in verified_batches(self._fd, self.size):
                if since_index >= self.index_interval_bytes:
                    offset_entries.append((header.base_offset, pos))
                    if self.max_timestamp >= 0 and (not time_entries or self.max_timestamp > time_entries[-1][0]):
                        time_entries.append((self.max_timestamp, self.offset_of_max_timestamp))
                    since_index = 0
                since_index += header.size
                if header.max_timestamp > self.max_timestamp:
                    self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.base_offset
                self.next_offset = header.next_offset
                valid_end = pos + header.size
        except CorruptRecordError as exc:
            log.warning(
                "storage.torn_tail_truncated",
                segment=self.path,
                position=valid_end,
                bytes=self.size - valid_end,
                reason=repr(exc.reason),
            )
        truncated = self.size - valid_end
        if truncated:
            os.ftruncate(self._fd, valid_end)
            self.size = valid_end
        if self.max_timestamp >= 0 and (not time_entries or self.max_timestamp > time_entries[-1][0]):
            time_entries.append((self.max_timestamp, self.offset_of_max_timestamp))
        self.offset_index.rewrite(offset_entries)
        self.time_index.rewrite(time_entries)
        self._bytes_since_index = since_index
        self._read_first_timestamp()
        return truncated

    def _read_first_timestamp(self) -> None:
        if self.size >= HEADER_SIZE:
            self.first_batch_timestamp = parse_header(os.pread(self._fd, HEADER_SIZE, 0)).max_timestamp

    # --- writing ------------------------------------------------------------------------------------
    def append(
        self,
        buffers: Sequence[bytes | bytearray | memoryview],
        batches: Sequence[AppendedBatch],
        *,
        sync: bool = False,
    ) -> None:
        """Write ``buffers`` (the concatenated batches) at the end and index the batches in them;
        with ``sync`` also fdatasync the log. All or nothing.

        If any write fails (ENOSPC, EIO, a short write that cannot be finished), the ``.log`` and the
        indexes are truncated back to their size before the call, the in-memory state is left as it
        was, and :class:`LogWriteError` is raised. If even that truncation fails, the error says the
        partition is offline and :attr:`needs_repair` stays True until :meth:`repair` succeeds.
        """
        if self.needs_repair:
            try:
                self.repair()
            except OSError as exc:
                raise LogWriteError(self.path.parent.name, str(exc), partition_offline=True) from exc
            log.info("storage.segment_repaired", segment=self.path, size=self.size)
        saved = self._append_state()
        try:
            self._write_all(buffers)
            self._index(saved[0], batches)
            if sync:
                os.fdatasync(self._fd)
        except OSError as exc:
            self._restore_append_state(saved)
            offline = not self._try_repair()
            log.warning(
                "storage.append_rolled_back",
                segment=self.path,
                size=self.size,
                rolled_back=not offline,
                reason=repr(str(exc)),
            )
            raise LogWriteError(self.path.parent.name, str(exc), partition_offline=offline) from exc

    def _write_all(self, buffers: Sequence[bytes | bytearray | memoryview]) -> None:
        total = sum(len(b) for b in buffers)
        written = os.writev(self._fd, buffers)
        if written != total:  # short write: finish the remainder, or fail trying
            rest = memoryview(b"".join(bytes(b) for b in buffers))[written:]
            while rest:
                done = os.write(self._fd, rest)
                if done <= 0:
                    raise OSError(errno.ENOSPC, "short write made no progress")
                rest = rest[done:]

    def _index(self, start: int, batches: Sequence[AppendedBatch]) -> None:
        self.size = start + sum(b.size for b in batches)
        interval = self.index_interval_bytes
        for batch in batches:
            if self._bytes_since_index >= interval:
                self.offset_index.append(batch.base_offset, start + batch.relative_position)
                if self.max_timestamp >= 0:
                    self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
                self._bytes_since_index = 0
            if batch.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = batch.max_timestamp, batch.base_offset
            if self.first_batch_timestamp is None:
                self.first_batch_timestamp = batch.max_timestamp
            self.next_offset = batch.next_offset
            self._bytes_since_index += batch.size

    def _append_state(self) -> _AppendState:
        return (
            self.size,
            self.next_offset,
            self.max_timestamp,
            self.offset_of_max_timestamp,
            self.first_batch_timestamp,
            self._bytes_since_index,
            len(self.offset_index),
            len(self.time_index),
        )

    def _restore_append_state(self, saved: _AppendState) -> None:
        (
            self.size,
            self.next_offset,
            self.max_timestamp,
            self.offset_of_max_timestamp,
            self.first_batch_timestamp,
            self._bytes_since_index,
            self._offset_entries,
            self._time_entries,
        ) = saved
        self.needs_repair = True

    def _try_repair(self) -> bool:
        try:
            self.repair()
        except OSError as exc:
            log.error("storage.segment_offline", segment=self.path, size=self.size, reason=repr(str(exc)))
            return False
        return True

    def repair(self) -> None:
        """Truncate the ``.log`` and both indexes back to what the in-memory state says they hold
        (dropping what a failed append left behind). Raises OSError if that fails; a no-op unless
        :attr:`needs_repair`."""
        if not self.needs_repair:
            return
        self.offset_index.truncate_to(self._offset_entries)
        self.time_index.truncate_to(self._time_entries)
        os.ftruncate(self._fd, self.size)
        self.needs_repair = False

    def sync_data(self) -> None:
        """fdatasync the log file only (what ``fsync="always"`` needs before acknowledging)."""
        os.fdatasync(self._fd)

    def flush(self) -> None:
        """fsync the log and every index file."""
        os.fsync(self._fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def seal(self) -> None:
        """Called when the segment stops being active: add a final time-index entry and fsync."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.flush()
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()

    def close(self) -> None:
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete_files(self) -> None:
        self.close()
        for path in (self.path, self.offset_index.path, self.time_index.path, self.txn_index.path):
            path.unlink(missing_ok=True)

    # --- reading ------------------------------------------------------------------------------------
    def read_at(self, position: int, size: int) -> bytes:
        return os.pread(self._fd, size, position)

    def headers_from(self, position: int) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of every batch from ``position`` to the end, reading only headers."""
        while position < self.size:
            raw = os.pread(self._fd, HEADER_SIZE, position)
            header = parse_header(raw)
            if position + header.size > self.size:
                raise CorruptRecordError("truncated batch", position=position)
            yield position, header
            position += header.size

    def find_batch(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch whose last offset is >= ``offset`` (the one containing it, or the next one
        after a compaction gap), or None if every batch in the segment ends before ``offset``."""
        for pos, header in self.headers_from(self.offset_index.position_for(offset)):
            if header.last_offset >= offset:
                return pos, header
        return None

    def read_batches(self, position: int, max_bytes: int, max_offset: int | None) -> bytes:
        """Whole batches from ``position``: at least one (KIP-74), then as many as fit in ``max_bytes``,
        none whose base offset is >= ``max_offset``."""
        available = self.size - position
        data = os.pread(self._fd, min(max(max_bytes, LOG_OVERHEAD), available), position)
        pos = 0
        while len(data) - pos >= LOG_OVERHEAD:
            base_offset, size = batch_lengths(data, pos)
            if max_offset is not None and base_offset >= max_offset:
                break
            if pos + size > len(data):
                if pos == 0:
                    return os.pread(self._fd, size, position)
                break
            pos += size
        return data if pos == len(data) else data[:pos]

    def largest_timestamp(self) -> int:
        """Largest batch timestamp in the segment, or the file's mtime when it has no batches."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(os.stat(self.path).st_mtime * 1000)
