"""ContainerLines: the access-log lines of a container log file, its pieces put back together.

A ``docker`` or ``cri`` file (:mod:`onceflow.logproducer.formats.container`) holds one entry per
line; a long line comes as several entries of one stream, the last one not partial. Each line of the
file goes through :meth:`ContainerLines.feed`, which hands on lines to parse:

1. ``auto``: until a file's first line that is not blank decides what the file is, lines are handed
   on as they are; a ``none`` file's lines always are.
2. A line that fails the checks every line gets (``too_long``, ``empty``, ``not_utf8``) or is not an
   entry (``unrecognised``) is handed on as :class:`Refused`, to be dead-lettered.
3. An entry joins its stream's pending pieces. The last piece (not partial) makes a line of their
   text; so does a piece that brings the pending text to ``max.line.bytes`` or more (it is then
   ``too_long``), and the stream starts a new line.
4. While a piece of any stream is pending, what is finished is held back, so that no position is
   committed past a piece not yet sent; when nothing is pending any more, everything held is handed on
   with the position after the line that completed it. After ``HOLD_LINES`` lines, or
   ``HOLD_FACTOR`` times ``max.line.bytes`` of them, with a piece still pending, the pending pieces
   are handed on as they are (what is held stays bounded, whatever the file holds).
5. :meth:`finish` (the file ended or was rotated away) hands on the pending pieces as they are and
   everything held.

Every line handed on is one line of the input: a line made of pieces counts once, and its dead letter
keeps the file's bytes of all its pieces.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Final

from onceflow.logproducer.formats.container import NONE, container_kind, read_entry
from onceflow.logproducer.formats.errors import MalformedLine
from onceflow.logproducer.formats.parser import decode_line
from onceflow.logproducer.tailer.position import FilePosition
from onceflow.logproducer.tailer.reader import Line

__all__ = ["HOLD_FACTOR", "HOLD_LINES", "ContainerLines", "Refused"]

#: How many lines may pass while a piece is pending before the pending pieces are handed on as they are.
HOLD_LINES: Final = 1000
#: How many times max.line.bytes of lines may pass while a piece is pending (the same, by size).
HOLD_FACTOR: Final = 4


@dataclass(frozen=True, slots=True)
class Refused:
    """A line of a container log that is not an entry: a dead letter with ``error``."""

    line: Line
    error: MalformedLine


@dataclass(slots=True)
class _Pieces:
    lines: list[Line] = field(default_factory=list)
    texts: list[bytes] = field(default_factory=list)
    size: int = 0

    def joined(self, position: FilePosition) -> Line:
        original = b"\n".join(line.data for line in self.lines)
        return Line(b"".join(self.texts), self.lines[0].start, position, original)


class ContainerLines:
    """Lines of one file at a time, ``mode`` being ``auto``, ``none``, ``docker`` or ``cri``."""

    def __init__(self, mode: str, *, max_line_bytes: int) -> None:
        self.mode = mode
        self.max_line_bytes = max_line_bytes
        #: What the current file is (None: auto, not decided yet).
        self.kind: str | None = None if mode == "auto" else mode
        self._pending: dict[str, _Pieces] = {}
        self._held: list[Line | Refused] = []
        self._held_for = self._held_bytes = 0
        self._last: FilePosition | None = None

    def reset(self) -> None:
        """A new file starts (after :meth:`finish`): ``auto`` decides again."""
        self.kind = None if self.mode == "auto" else self.mode

    def feed(self, line: Line) -> list[Line | Refused]:
        """What ``line`` (read from the file) hands on: nothing, itself, or lines it completed."""
        # Step 1
        if self.kind is None:
            try:
                self.kind = container_kind(decode_line(line.data, self.max_line_bytes))
            except MalformedLine:
                return [line]
        if self.kind == NONE:
            return [line]
        self._last = line.position
        # Step 2
        try:
            entry = read_entry(self.kind, decode_line(line.data, self.max_line_bytes))
        except MalformedLine as exc:
            self._held.append(Refused(line, exc))
        else:
            # Step 3
            pieces = self._pending.setdefault(entry.stream, _Pieces())
            pieces.lines.append(line)
            pieces.texts.append(entry.content)
            pieces.size += len(entry.content)
            if not entry.partial or pieces.size >= self.max_line_bytes:
                del self._pending[entry.stream]
                self._held.append(pieces.joined(line.position))
        # Step 4
        if self._pending:
            self._held_for += 1
            self._held_bytes += len(line.data)
            if self._held_for < HOLD_LINES and self._held_bytes < HOLD_FACTOR * self.max_line_bytes:
                return []
        return self.finish()

    def finish(self) -> list[Line | Refused]:
        """Step 5: the pending pieces as they are, and everything held, at the last position read."""
        position = self._last
        if position is None:
            return []
        done = [*self._held, *(pieces.joined(position) for pieces in self._pending.values())]
        self._held, self._pending, self._held_for, self._held_bytes = [], {}, 0, 0
        return [_at(item, position) for item in done]


def _at(item: Line | Refused, position: FilePosition) -> Line | Refused:
    if isinstance(item, Refused):
        return Refused(replace(item.line, position=position), item.error)
    return replace(item, position=position)
