"""Errors of the internal state log. Each names the file it concerns."""

from __future__ import annotations

from pathlib import Path

from onceflow.core.errors import OnceflowError


class StateLogError(OnceflowError):
    """Base class of every state log error."""

    def __init__(self, path: Path, message: str) -> None:
        self.path = path
        super().__init__(f"state log {path}: {message}")


class StateLogCorrupt(StateLogError):  # noqa: N818 - the name says what it is
    """The file is not a state log this code can read (bad magic or unknown format version).

    A torn or corrupt *tail* is not this error: it is truncated on open with a warning.
    """


class StateLogLocked(StateLogError):  # noqa: N818
    """Another process (or another open ``StateLog`` in this one) holds the log open."""


class StateLogClosed(StateLogError):  # noqa: N818
    """The log was closed, or failed, and accepts no more appends."""


class StateLogWriteFailed(StateLogError):  # noqa: N818
    """An append could not be written; the log refuses further appends until reopened.

    Reopening replays the file and truncates whatever part of the failed append reached the disk.
    """
