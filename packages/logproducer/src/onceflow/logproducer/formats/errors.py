"""The one error of line parsing, and the stable kinds of malformed lines."""

from __future__ import annotations

import enum

from onceflow.core.errors import OnceflowError

__all__ = ["KINDS", "MalformedKind", "MalformedLine", "shown"]


class MalformedKind(enum.StrEnum):
    """Why a line is malformed, as a short machine-readable string (the dead letter's ``onceflow.error.kind``)."""

    EMPTY = "empty"
    NOT_UTF8 = "not_utf8"
    TOO_LONG = "too_long"
    BAD_QUOTING = "bad_quoting"
    BAD_TIMESTAMP = "bad_timestamp"
    BAD_IP = "bad_ip"
    BAD_STATUS = "bad_status"
    BAD_BYTES = "bad_bytes"
    UNRECOGNISED = "unrecognised"


#: Every kind string (the audit's independent recount keeps a copy; a test checks both agree).
KINDS: frozenset[str] = frozenset(kind.value for kind in MalformedKind)


class MalformedLine(OnceflowError):  # noqa: N818 - reads as an outcome
    """A line that is not in the expected format: ``reason`` says what is wrong (for people),
    ``kind`` which rule it broke (for machines)."""

    def __init__(self, reason: str, kind: MalformedKind = MalformedKind.UNRECOGNISED) -> None:
        self.reason = reason
        self.kind = kind
        super().__init__(reason)


def shown(text: str, limit: int = 120) -> str:
    """``repr`` of a piece of a line for a reason, cut to about ``limit`` characters (lines may be 1 MiB)."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + f"... ({len(text)} characters)"
