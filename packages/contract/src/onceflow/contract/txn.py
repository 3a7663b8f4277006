"""The id of a two-phase-commit transaction, as every process names it: ``<job>:<batch>``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class TransactionId:
    """One micro-batch of one job. ``str()`` is ``<job>:<batch>``; :meth:`parse` is its inverse.

    Raises ValueError for an empty job or a negative batch.
    """

    job: str
    batch: int

    def __post_init__(self) -> None:
        if not self.job:
            raise ValueError("transaction job must not be empty")
        if self.batch < 0:
            raise ValueError(f"transaction batch must be >= 0, got {self.batch} (job {self.job!r})")

    def __str__(self) -> str:
        return f"{self.job}:{self.batch}"

    def log_fields(self) -> dict[str, object]:
        """The ids every log line about this transaction carries: ``txn=``, ``job=``, ``batch=``."""
        return {"txn": self, "job": self.job, "batch": self.batch}

    @classmethod
    def parse(cls, text: str) -> TransactionId:
        """``<job>:<batch>`` back into an id (the job may itself contain ``:``); ValueError otherwise."""
        job, sep, batch = text.rpartition(":")
        if not sep or not batch.isdigit():
            raise ValueError(f"expected JOB:BATCH, got {text!r}")
        return cls(job, int(batch))
