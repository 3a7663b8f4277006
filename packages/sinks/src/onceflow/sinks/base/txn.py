"""Transaction ids and outcomes as the sink participants see them."""

from __future__ import annotations

import enum
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class TxnId:
    """A two-phase-commit transaction: one micro-batch of one job. ``str()`` is ``<job>:<batch>``."""

    job: str
    batch: int

    def __post_init__(self) -> None:
        if not self.job:
            raise ValueError("transaction job must not be empty")
        if self.batch < 0:
            raise ValueError(f"transaction batch must be >= 0, got {self.batch} (job {self.job!r})")

    def __str__(self) -> str:
        return f"{self.job}:{self.batch}"

    @classmethod
    def parse(cls, text: str) -> TxnId:
        """The inverse of ``str()``; the job may itself contain ``:``."""
        job, sep, batch = text.rpartition(":")
        if not sep or not batch.isdigit():
            raise ValueError(f"expected <job>:<batch>, got {text!r}")
        return cls(job, int(batch))


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
