"""A participant's answer to Prepare, as every process names it (the sinks vote it, the participant
server sends it, the contract's client and the coordinator read it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PrepareVote:
    """Yes (``vote_commit``: a promise that the commit will succeed) with the ``rows`` the batch writes,
    or no with its ``reason``. A no vote is an answer, not an error."""

    vote_commit: bool
    reason: str = ""
    rows: int = 0

    @classmethod
    def yes(cls, rows: int) -> PrepareVote:
        return cls(vote_commit=True, rows=rows)

    @classmethod
    def no(cls, reason: str) -> PrepareVote:
        return cls(vote_commit=False, reason=reason)
