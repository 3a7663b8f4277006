"""RotatingFileReader: complete lines of a log file, following rotation, resumable from a position.

Rotation styles it follows:

- **rename** (logrotate ``create``): ``access.log`` becomes ``access.log.1`` and a new ``access.log``
  appears. The reader notices the path names another inode, finishes the old file through its open
  descriptor (a last line without newline included), then reads the new file from its start;
- **copy-truncate**: ``access.log`` is copied to ``access.log.1`` and truncated in place. The reader
  notices the file is shorter than its offset, or starts with other bytes; it reads the rest of
  what it had not read from the copy (same first bytes), then the truncated file from its start.

Every open, the first and each one after a rotation, goes through
:func:`~onceflow.core.confined_open.open_confined`: only a regular file inside ``allowed`` is read,
checked on what was opened. A path that now leads outside (a symlink swapped in at a rotation)
raises :class:`~onceflow.core.confinement.PathNotAllowed`; a rotated sibling that does is skipped.

Resuming (:meth:`RotatingFileReader.open`), steps:
    1. Look for the position's file: the path itself, then the rotated siblings (names starting with
       the file's name, in its directory), by device + inode + fingerprint.
    2. Failing that, a sibling with the same first bytes and at least ``offset`` bytes (a copy).
    3. Failing that, the file is gone: start the current file at 0 and report the loss (or raise
       :class:`PathNotAllowed` when the path now leads outside ``allowed``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from onceflow.core.confined_open import open_confined
from onceflow.core.confinement import PathNotAllowed
from onceflow.core.logging import get_logger
from onceflow.logproducer.tailer.position import FilePosition

_log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Line:
    """One line (without its newline), where it starts, and the position just after it.

    A line put together from container-log entries (:mod:`.container_lines`) has the text they held
    as ``data`` and the file's bytes of those entries as ``original``.
    """

    data: bytes
    start: int
    position: FilePosition
    original: bytes | None = None

    @property
    def file_bytes(self) -> bytes:
        """The bytes of the file this line is (what a dead letter keeps)."""
        return self.data if self.original is None else self.original


class RotatingFileReader:
    """Complete lines of ``path`` and of its rotated siblings, all read only inside ``allowed`` (directories)."""

    def __init__(
        self,
        path: str | Path,
        *,
        allowed: Iterable[str | os.PathLike[str]],
        fingerprint_bytes: int = 256,
        max_line_bytes: int = 1 << 20,
        chunk_bytes: int = 1 << 20,
    ) -> None:
        self.path = Path(path).absolute()
        self.allowed = tuple(allowed)
        self.fingerprint_bytes = fingerprint_bytes
        self.max_line_bytes = max_line_bytes
        self.chunk_bytes = max(chunk_bytes, max_line_bytes + 1)
        self._fd: int | None = None
        self._pos: FilePosition | None = None
        #: The open file is a rotated one: finish it, then move to the path.
        self._draining = False
        #: A re-open refused after lines were read: raised by the next read.
        self._refused: PathNotAllowed | None = None
        self.lost_positions = 0

    # -- opening ----------------------------------------------------------------------------------------

    def _open(self, path: Path) -> int | None:
        """A descriptor of ``path``; None when it is missing or unreadable. Outside ``allowed``, the
        path itself raises :class:`PathNotAllowed` and a rotated sibling is skipped (None)."""
        try:
            return open_confined(path, self.allowed)
        except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError):
            return None
        except PathNotAllowed as exc:
            if path == self.path:
                _log.error("tailer.refused", file=str(path), reason=exc.reason)
                raise
            _log.warning("tailer.sibling_refused", file=str(self.path), sibling=str(path), reason=exc.reason)
            return None

    def _siblings(self) -> list[Path]:
        try:
            names = sorted(os.listdir(self.path.parent))
        except FileNotFoundError:
            return []
        return [self.path.parent / n for n in names if n.startswith(self.path.name) and n != self.path.name]

    def _use(self, fd: int, offset: int, *, draining: bool) -> None:
        self.close()
        self._fd = fd
        self._pos = FilePosition.of(fd, offset, self.fingerprint_bytes)
        self._draining = draining

    def open(self, resume: FilePosition | None) -> None:
        """Open the file to read next: where ``resume`` points (see the module docstring), or the path's start."""
        if resume is None:
            self._open_path()
            return
        candidates = [self.path, *self._siblings()]
        refused: PathNotAllowed | None = None  # the path leads outside: still finish a rotated file
        # Step 1 and Step 2
        for check in (resume.same_file, resume.same_content):
            for candidate in candidates:
                try:
                    fd = self._open(candidate)
                except PathNotAllowed as exc:
                    refused = exc
                    continue
                if fd is None:
                    continue
                if check(fd) and os.fstat(fd).st_size >= resume.offset:
                    self._use(fd, resume.offset, draining=candidate != self.path)
                    self._pos = resume
                    _log.info("tailer.resumed", file=str(candidate), offset=resume.offset, draining=self._draining)
                    return
                os.close(fd)
        # Step 3
        if refused is not None:
            raise refused
        self.lost_positions += 1
        _log.warning("tailer.position_lost", file=str(self.path), inode=resume.inode, offset=resume.offset)
        self._open_path()

    def _open_path(self) -> bool:
        fd = self._open(self.path)
        if fd is None:
            self.close()
            return False
        self._use(fd, 0, draining=False)
        return True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None

    @property
    def position(self) -> FilePosition | None:
        return self._pos

    @property
    def refused(self) -> PathNotAllowed | None:
        """A refused re-open the next :meth:`read` raises (the lines before it were returned)."""
        return self._refused

    # -- reading ----------------------------------------------------------------------------------------

    def read(self, max_lines: int) -> list[Line]:
        """Up to ``max_lines`` complete lines; fewer (maybe none) at the end of the data.

        A refused re-open (:class:`PathNotAllowed`) after some lines were read returns those lines
        first (the rest of a rotated file is not lost) and raises on the next call.
        """
        if self._refused is not None:
            raise self._refused
        lines: list[Line] = []
        try:
            self._read_into(lines, max_lines)
        except PathNotAllowed as exc:
            if not lines:
                raise
            self._refused = exc
        return lines

    def _read_into(self, lines: list[Line], max_lines: int) -> None:
        while len(lines) < max_lines:
            if self._fd is None and not self._open_path():
                break
            if not self._draining and not self._intact():
                assert self._pos is not None
                if not self._follow_copy_truncate(self._pos):
                    break
                continue
            got = self._read_lines(max_lines - len(lines))
            lines.extend(got)
            if not got and not self._follow_rotation(lines):
                break

    def read_rest(self) -> Line | None:
        """At the end of a finished file: its last line when it has no newline (None otherwise).

        Only for a bounded input: while a file is live, a line without newline may still be written.
        """
        if self._fd is None or self._pos is None:
            return None
        pos = self._pos
        size = os.fstat(self._fd).st_size
        if size <= pos.offset:
            return None
        data = os.pread(self._fd, min(size - pos.offset, self.max_line_bytes), pos.offset)
        line = Line(data, pos.offset, pos.at(pos.offset + len(data)))
        self._pos = line.position
        return line

    def _intact(self) -> bool:
        """The open file still holds what the position says: not truncated, same first bytes."""
        assert self._fd is not None and self._pos is not None
        return os.fstat(self._fd).st_size >= self._pos.offset and self._pos.same_file(self._fd)

    def _read_lines(self, max_lines: int) -> list[Line]:
        fd, pos = self._fd, self._pos
        assert fd is not None and pos is not None
        data = os.pread(fd, self.chunk_bytes, pos.offset)
        if not data:
            return []
        if pos.fingerprint_len < self.fingerprint_bytes and pos.same_file(fd):
            pos = FilePosition.of(fd, pos.offset, self.fingerprint_bytes)
        lines: list[Line] = []
        start = 0
        base = pos.offset
        while len(lines) < max_lines:
            end = data.find(b"\n", start, start + self.max_line_bytes + 1)  # a longer line comes in pieces
            if end < 0:
                if len(data) - start >= self.max_line_bytes:  # too long: hand it on (it will be dead-lettered)
                    end = start + self.max_line_bytes
                    lines.append(Line(data[start:end], base + start, pos.at(base + end)))
                    start = end
                    continue
                break
            lines.append(Line(data[start:end], base + start, pos.at(base + end + 1)))
            start = end + 1
        self._pos = pos.at(base + start)
        return lines

    def _follow_rotation(self, lines: list[Line]) -> bool:
        """At the end of the open file: move on if it was rotated. True when the reader moved."""
        fd, pos = self._fd, self._pos
        assert fd is not None and pos is not None
        if self._draining:
            size = os.fstat(fd).st_size
            if size > pos.offset:  # a last line without newline: the file is finished, so it is complete
                data = os.pread(fd, size - pos.offset, pos.offset)
                lines.append(Line(data, pos.offset, pos.at(size)))
            _log.info("tailer.rotated_file_done", file=str(self.path), inode=pos.inode, offset=size)
            self.close()
            self._open_path()
            return True
        try:
            at_path = os.stat(self.path)
        except FileNotFoundError:
            # Renamed away, new file not created yet: finish the old one now, then wait for the new one.
            self._draining = True
            return True
        current = os.fstat(fd)
        if (at_path.st_dev, at_path.st_ino) != (current.st_dev, current.st_ino):
            _log.info("tailer.rotation_rename", file=str(self.path), old_inode=current.st_ino, new_inode=at_path.st_ino)
            self._draining = True
            return True
        return False

    def _follow_copy_truncate(self, pos: FilePosition) -> bool:
        for sibling in self._siblings():
            fd = self._open(sibling)
            if fd is None:
                continue
            if pos.same_content(fd):
                _log.info("tailer.rotation_copy_truncate", file=str(self.path), copy=str(sibling), offset=pos.offset)
                self._use(fd, pos.offset, draining=True)
                return True
            os.close(fd)
        self.lost_positions += 1
        _log.warning("tailer.truncated_without_copy", file=str(self.path), offset=pos.offset)
        return self._open_path()
