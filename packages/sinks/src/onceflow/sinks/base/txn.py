"""Outcomes and votes as the sink participants see them (transaction ids: ``onceflow.core.contract``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Outcome(enum.Enum):
    """The coordinator's decision for a transaction (presumed abort: no decision means ABORT)."""

    COMMIT = "commit"
    ABORT = "abort"


@dataclass(frozen=True)
class PrepareResult:
    """A participant's vote. ``rows`` is how many distinct (window_start, ip) rows the batch writes."""

    vote_commit: bool
    rows: int = 0
    reason: str = ""

    @classmethod
    def yes(cls, rows: int) -> PrepareResult:
        return cls(vote_commit=True, rows=rows)

    @classmethod
    def no(cls, reason: str) -> PrepareResult:
        return cls(vote_commit=False, reason=reason)
