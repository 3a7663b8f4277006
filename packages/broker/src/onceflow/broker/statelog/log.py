"""``StateLog``: a durable, append-only key/value log for the broker's internal state."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType

from onceflow.broker.statelog.exceptions import (
    StateLogClosed,
    StateLogCorrupt,
    StateLogLocked,
    StateLogWriteFailed,
)
from onceflow.broker.statelog.framing import (
    FILE_HEADER,
    Record,
    TornTail,
    encode_frame,
    read_frames,
    single_record_frame_size,
)
from onceflow.core.fsync import fsync_path, write_all
from onceflow.core.logging import get_logger

logger = get_logger(__name__)

COMPACTION_SUFFIX = ".compact.tmp"
LOCK_SUFFIX = ".lock"
_WRITE_CHUNK = 1 << 20


class StateLog:
    """An append-only log of ``(key, value)`` records; ``value=None`` is a tombstone for ``key``.

    Guarantees:

    * When ``append``/``append_many`` returns, the records are in the file through ``os.write`` (no
      userspace buffer), so they survive ``kill -9`` of this process. With ``fsync=True`` they are also
      fsynced, so they survive power loss.
    * ``append_many`` is atomic: after any crash, replay yields all of its records or none of them.
    * ``replay`` yields every record in append order (after compaction: the last value of every live
      key, in the order those values were appended).
    * A torn tail (partial frame or CRC mismatch, from a crash mid-write) is truncated on ``open``, with a
      warning. Nothing after the first invalid frame is trusted.
    * Compaction keeps only the last value per key and drops tombstones. It is atomic (tmp file, fsync,
      rename, fsync of the directory; always fsynced, whatever ``fsync`` says): a crash at any point
      leaves either the old or the new file, and a leftover tmp file is removed on ``open``. It runs
      by itself when the file grows past ``compaction_ratio`` times its live size (and past
      ``min_compaction_bytes``).
    * One process at a time: ``open`` takes an exclusive lock (``<path>.lock``), released by ``close``
      or by the death of the process.

    Use ``StateLog.open``; the log is not safe for use from several threads.
    """

    def __init__(
        self,
        path: Path,
        *,
        fsync: bool,
        lock_fd: int,
        end: int,
        live_sizes: dict[bytes, int],
        compaction_ratio: float,
        min_compaction_bytes: int,
    ) -> None:
        self._path = path
        self._fsync = fsync
        self._lock_fd: int | None = lock_fd
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND)
        self._end = end
        self._live_sizes = live_sizes
        self._live_bytes = sum(live_sizes.values())
        self._compaction_ratio = compaction_ratio
        self._min_compaction_bytes = min_compaction_bytes
        self._next_compaction_check = 0
        self._failed = False

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        fsync: bool,
        compaction_ratio: float = 4.0,
        min_compaction_bytes: int = 1 << 20,
    ) -> StateLog:
        """Open (creating if needed) the log at ``path``, recovering it after a crash.

        Recovery steps:

        1. Take the exclusive lock, or raise ``StateLogLocked``.
        2. Remove a leftover compaction tmp file: the rename never happened, so ``path`` is authoritative.
        3. Create the file with its header if it is missing or holds only part of a header.
        4. Scan every frame; truncate a torn tail with a warning; index the live keys.

        Raises ``StateLogCorrupt`` if the file is not a state log of a known format version.
        """
        if compaction_ratio <= 1.0:
            raise ValueError(f"compaction_ratio must be > 1, got {compaction_ratio}")
        path.parent.mkdir(parents=True, exist_ok=True)
        # Step 1
        lock_fd = _lock(path)
        try:
            # Step 2
            leftover = _compaction_tmp_path(path)
            if leftover.exists():
                logger.warning("statelog.interrupted_compaction_removed", path=leftover)
                leftover.unlink()
            # Step 3
            _ensure_header(path, fsync=fsync)
            # Step 4
            end, live_sizes = _recover(path, fsync=fsync)
        except BaseException:
            os.close(lock_fd)
            raise
        log = cls(
            path,
            fsync=fsync,
            lock_fd=lock_fd,
            end=end,
            live_sizes=live_sizes,
            compaction_ratio=compaction_ratio,
            min_compaction_bytes=min_compaction_bytes,
        )
        logger.info("statelog.opened", path=path, bytes=end, live_keys=len(live_sizes))
        return log

    @property
    def path(self) -> Path:
        """The log file."""
        return self._path

    @property
    def size_bytes(self) -> int:
        """Bytes in the file, header included."""
        return self._end

    @property
    def live_bytes(self) -> int:
        """Bytes the file would hold, after its header, if it were compacted now."""
        return self._live_bytes

    def append(self, key: bytes, value: bytes | None) -> None:
        """Durably append one record (``value=None`` deletes ``key``). See the class guarantees."""
        self.append_many([(key, value)])

    def append_many(self, records: Sequence[Record]) -> None:
        """Durably and atomically append records with a single write. An empty sequence is a no-op.

        Raises ``StateLogWriteFailed`` if the write fails; the file is truncated back, and later
        appends are refused only if that truncation failed too.
        """
        self._check_writable()
        if not records:
            return
        frame = encode_frame(records)
        assert self._fd is not None
        self._write(self._fd, frame)
        self._end += len(frame)
        for key, value in records:
            self._index(key, value)
        self._maybe_compact()

    def replay(self) -> Iterator[Record]:
        """The records of the log, in order, as of this call (later appends are not included)."""
        self._check_open()
        file = self._path.open("rb")
        end = self._end

        def records() -> Iterator[Record]:
            with file:
                file.seek(len(FILE_HEADER))
                for item in read_frames(file, len(FILE_HEADER), end):
                    if isinstance(item, TornTail):
                        raise StateLogCorrupt(self._path, f"invalid frame at offset {item.start}: {item.reason}")
                    yield from item.records

        return records()

    def compact(self) -> None:
        """Rewrite the log with only the last value of each live key, atomically.

        Steps:

        1. Collect the live records by replaying the log.
        2. Write them to ``<path>.compact.tmp`` and fsync it.
        3. Rename the tmp file over the log and fsync the directory.
        4. Reopen the append descriptor on the new file.
        """
        self._check_writable()
        # Step 1
        live: dict[bytes, bytes] = {}
        for key, value in self.replay():
            live.pop(key, None)
            if value is not None:
                live[key] = value
        # Step 2
        tmp = _compaction_tmp_path(self._path)
        tmp_fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        size = 0
        try:
            chunk = [FILE_HEADER]
            chunk_bytes = len(FILE_HEADER)
            for key, value in live.items():
                frame = encode_frame([(key, value)])
                chunk.append(frame)
                chunk_bytes += len(frame)
                if chunk_bytes >= _WRITE_CHUNK:
                    size += write_all(tmp_fd, b"".join(chunk))
                    chunk, chunk_bytes = [], 0
            size += write_all(tmp_fd, b"".join(chunk))
            os.fsync(tmp_fd)
        finally:
            os.close(tmp_fd)
        # Step 3
        before = self._end
        os.replace(tmp, self._path)
        fsync_path(self._path.parent)
        # Step 4
        assert self._fd is not None
        os.close(self._fd)
        self._fd = os.open(self._path, os.O_WRONLY | os.O_APPEND)
        self._end = size
        self._live_sizes = {key: single_record_frame_size(key, value) for key, value in live.items()}
        self._live_bytes = sum(self._live_sizes.values())
        logger.info("statelog.compacted", path=self._path, bytes_before=before, bytes_after=size, live_keys=len(live))

    def close(self) -> None:
        """Close the file and release the lock. Idempotent."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> StateLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _index(self, key: bytes, value: bytes | None) -> None:
        self._live_bytes -= self._live_sizes.pop(key, 0)
        if value is not None:
            size = single_record_frame_size(key, value)
            self._live_sizes[key] = size
            self._live_bytes += size

    def _maybe_compact(self) -> None:
        if self._end < max(self._min_compaction_bytes, self._next_compaction_check):
            return
        if self._end <= self._compaction_ratio * (self._live_bytes + len(FILE_HEADER)):
            return
        try:
            self.compact()
        except OSError:
            # The append itself succeeded and the old file is intact; compaction is retried once the
            # file has grown by another ratio.
            logger.exception("statelog.compaction_failed", path=self._path, bytes=self._end)
            _compaction_tmp_path(self._path).unlink(missing_ok=True)
            self._next_compaction_check = int(self._end * self._compaction_ratio)

    def _write(self, fd: int, data: bytes) -> None:
        """Write one frame at the end; on failure (disk full, I/O error) truncate the file back to
        where it was, so the frame is neither replayed nor in the way of the next append. Only if
        that truncation fails too are later appends refused."""
        try:
            write_all(fd, data)
            if self._fsync:
                os.fsync(fd)
        except OSError as error:
            try:
                os.ftruncate(fd, self._end)
            except OSError:
                self._failed = True
            logger.warning(
                "statelog.append_rolled_back",
                path=self._path,
                size=self._end,
                refusing_appends=self._failed,
                reason=error,
            )
            raise StateLogWriteFailed(self._path, f"append failed: {error}") from error

    def _check_open(self) -> None:
        if self._fd is None:
            raise StateLogClosed(self._path, "closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self._failed:
            raise StateLogClosed(self._path, "an earlier append failed; reopen the log to recover")


def _compaction_tmp_path(path: Path) -> Path:
    return path.with_name(path.name + COMPACTION_SUFFIX)


def _lock(path: Path) -> int:
    lock_path = path.with_name(path.name + LOCK_SUFFIX)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StateLogLocked(path, f"already open elsewhere (lock {lock_path} is held)") from None
    return fd


def _ensure_header(path: Path, *, fsync: bool) -> None:
    existing = path.read_bytes()[: len(FILE_HEADER)] if path.exists() else b""
    if len(existing) == len(FILE_HEADER):
        if existing != FILE_HEADER:
            raise StateLogCorrupt(path, f"bad file header {existing!r} (expected {FILE_HEADER!r})")
        return
    if not FILE_HEADER.startswith(existing):
        raise StateLogCorrupt(path, f"bad file header {existing!r} (expected {FILE_HEADER!r})")
    # Missing, or created by a process that died before its header was complete.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, FILE_HEADER)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    if fsync:
        fsync_path(path.parent)


def _recover(path: Path, *, fsync: bool) -> tuple[int, dict[bytes, int]]:
    """Scan the log, truncate a torn tail, and return the valid end and the live key sizes."""
    live_sizes: dict[bytes, int] = {}
    file_size = path.stat().st_size
    end = len(FILE_HEADER)
    with path.open("rb") as file:
        file.seek(end)
        for item in read_frames(file, end, file_size):
            if isinstance(item, TornTail):
                logger.warning(
                    "statelog.torn_tail_truncated",
                    path=path,
                    offset=item.start,
                    dropped_bytes=file_size - item.start,
                    reason=item.reason,
                )
                break
            for key, value in item.records:
                live_sizes.pop(key, None)
                if value is not None:
                    live_sizes[key] = single_record_frame_size(key, value)
            end = item.end
    if end < file_size:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.ftruncate(fd, end)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
    return end, live_sizes
