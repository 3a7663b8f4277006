"""Errors of the group coordinator.

Protocol-level outcomes (unknown member, stale generation, ...) are ``ErrorCode`` results, not
exceptions: exceptions here mean a bug or a damaged state log.
"""

from __future__ import annotations

from onceflow.core.errors import OnceflowError


class GroupCoordinatorError(OnceflowError):
    """Base class of every group coordinator error."""


class IllegalGroupTransition(GroupCoordinatorError):  # noqa: N818 - the name says what it is
    """Code tried to move a group along a transition the group state machine does not have (a bug)."""

    def __init__(self, group_id: str, current: str, target: str) -> None:
        self.group_id = group_id
        self.current = current
        self.target = target
        super().__init__(f"group {group_id!r} cannot go from {current} to {target}")


class InvalidGroupRecord(GroupCoordinatorError):  # noqa: N818
    """A record in the group state log cannot be decoded (unknown kind or version, or malformed)."""

    def __init__(self, key: bytes, reason: str) -> None:
        self.key = key
        super().__init__(f"invalid group state record {key!r}: {reason}")


class CoordinatorNotRunning(GroupCoordinatorError):  # noqa: N818
    """The coordinator was used before ``start()`` or after ``stop()``."""
