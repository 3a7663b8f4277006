"""Timing and retention of the two-phase-commit engine."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff: ``initial``, then times ``multiplier`` per retry, capped at ``maximum`` (seconds)."""

    initial: float = 0.1
    maximum: float = 10.0
    multiplier: float = 2.0

    def delays(self) -> Iterator[float]:
        delay = self.initial
        while True:
            yield delay
            delay = min(self.maximum, delay * self.multiplier)


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """How long the engine waits for what. All durations in seconds."""

    #: The whole prepare phase: a participant that has not voted by then counts as a no vote.
    prepare_timeout: float = 10.0
    #: How long CommitTransaction waits for every participant's commit ack before it answers
    #: COMMITTING (the decision is durable; delivery goes on in the background).
    commit_wait: float = 30.0
    #: Deadline of one Commit call; failed calls are retried with ``commit_backoff``.
    commit_call_timeout: float = 5.0
    commit_backoff: Backoff = field(default_factory=Backoff)
    #: Deadline of the (best-effort) Abort calls.
    abort_timeout: float = 5.0
    #: Log PREPARING before sending Prepare (visible to ListTransactions, aborted by recovery).
    log_preparing: bool = True
    #: How long a COMMITTED (END) record waits to ride with the next append before it is
    #: written alone (group commit; 0 writes it at once).
    end_linger: float = 0.05
    #: Final transactions older than this many batches behind the newest committed one are
    #: tombstoned in the log (0 keeps everything).
    retain_batches: int = 1000
    #: Default and maximum page size of ListTransactions.
    list_limit: int = 100
    max_list_limit: int = 1000
    #: Threads for participant calls.
    max_parallel_calls: int = 64
