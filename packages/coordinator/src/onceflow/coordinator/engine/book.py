"""The coordinator's state: jobs and transactions, changed durably through the transaction log.

Guarantees:

- a state change becomes visible only after the log made it durable (:meth:`TransactionBook.write`);
- every transaction that is not final has a *settled* event that is set once it is final, so
  duplicate requests can join an attempt instead of restarting it;
- when the log fails (fenced, or an unknown outcome) the book fails for good: every later call
  raises :class:`CoordinatorStopped`, waiters wake up, and ``failed`` is set so the process stops.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Sequence

from onceflow.coordinator.exceptions import CoordinatorStopped, TransactionLogError
from onceflow.coordinator.log.base import TransactionLog
from onceflow.coordinator.log.records import LogRecord, Tombstone
from onceflow.coordinator.model import JobState, ParticipantVote, Transaction, TransactionId, TransactionState
from onceflow.core.logging import get_logger

_log = get_logger(__name__)


class TransactionBook:
    """Jobs and transactions in memory, mirrored by a :class:`TransactionLog`. Thread-safe."""

    def __init__(self, log: TransactionLog) -> None:
        self.log = log
        #: Held while deciding and writing, so decisions and the log are in the same order.
        self.lock = threading.RLock()
        #: Set when the book can no longer serve (closed, or the log failed).
        self.failed = threading.Event()
        self.failure: BaseException | None = None
        self._jobs: dict[str, JobState] = {}
        self._txns: dict[TransactionId, Transaction] = {}
        self._settled: dict[TransactionId, threading.Event] = {}

    # -- loading and writing -------------------------------------------------------------------

    def load(self, records: Iterable[LogRecord]) -> None:
        """Rebuild the state from replayed records (the last record of a key wins)."""
        with self.lock:
            for record in records:
                self._apply(record)

    def write(self, *records: LogRecord) -> None:
        """Make ``records`` durable in one log append, then apply them. A log failure fails the book."""
        with self.lock:
            self.check_alive()
            try:
                self.log.append(records)
            except TransactionLogError as exc:
                self.fail(exc)
                raise
            for record in records:
                self._apply(record)

    def remember(self, txn: Transaction) -> None:
        """Track ``txn`` in memory without logging it (a PREPARING attempt when PREPARING is not logged)."""
        with self.lock:
            self.check_alive()
            self._apply(txn)

    def note(self, txn: Transaction) -> None:
        """Record votes/acks of ``txn`` in memory only (they need no durability: Commit is idempotent).

        Ignored when the stored transaction has moved on (another state or attempt).
        """
        with self.lock:
            current = self._txns.get(txn.id)
            if current is not None and (current.state, current.attempt) == (txn.state, txn.attempt):
                self._txns[txn.id] = dataclasses.replace(current, votes=txn.votes, updated_at=txn.updated_at)

    def note_vote(self, txn: Transaction, vote: ParticipantVote) -> None:
        """Record one participant's vote of attempt ``txn`` in memory, as it arrives (for ListTransactions)."""
        with self.lock:
            current = self._txns.get(txn.id)
            if current is not None and (current.state, current.attempt) == (txn.state, txn.attempt):
                self._txns[txn.id] = with_vote(current, vote)

    def _apply(self, record: LogRecord) -> None:
        if isinstance(record, JobState):
            self._jobs[record.job] = record
            return
        if isinstance(record, Tombstone):
            self._txns.pop(record.id, None)
            event = self._settled.pop(record.id, None)
            if event is not None:
                event.set()
            return
        self._txns[record.id] = record
        if record.state.is_final:
            event = self._settled.pop(record.id, None)
            if event is not None:
                event.set()
        elif record.id not in self._settled:
            self._settled[record.id] = threading.Event()

    # -- failure ------------------------------------------------------------------------------

    def fail(self, exc: BaseException) -> None:
        """Stop serving for good because of ``exc``; wakes every waiter."""
        with self.lock:
            if self.failure is None:
                self.failure = exc
                _log.error("coordinator.failed", error=exc)
            self.failed.set()
            for event in self._settled.values():
                event.set()

    def close(self) -> None:
        """Stop serving (a clean shutdown): later calls raise :class:`CoordinatorStopped`."""
        with self.lock:
            if self.failure is None:
                self.failure = CoordinatorStopped("the coordinator was closed")
            self.failed.set()
            for event in self._settled.values():
                event.set()

    def check_alive(self) -> None:
        if isinstance(self.failure, CoordinatorStopped):
            raise self.failure
        if self.failure is not None:
            raise CoordinatorStopped(f"the coordinator stopped serving: {self.failure}") from None

    # -- queries -----------------------------------------------------------------------------

    def job(self, job: str) -> JobState | None:
        with self.lock:
            return self._jobs.get(job)

    def txn(self, txn_id: TransactionId) -> Transaction | None:
        with self.lock:
            return self._txns.get(txn_id)

    def settled_event(self, txn_id: TransactionId) -> threading.Event:
        """Set once ``txn_id`` is final (already set if it is final or unknown)."""
        with self.lock:
            event = self._settled.get(txn_id)
            if event is None:
                event = threading.Event()
                event.set()
            return event

    def transactions(self, job: str | None = None, states: Sequence[TransactionState] = ()) -> list[Transaction]:
        """Transactions of ``job`` (all jobs if None) in ``states`` (all if empty), by job then newest batch."""
        with self.lock:
            selected = [
                txn
                for txn in self._txns.values()
                if (job is None or txn.id.job == job) and (not states or txn.state in states)
            ]
        selected.sort(key=lambda txn: (txn.id.job, -txn.id.batch))
        return selected

    def jobs(self) -> list[JobState]:
        with self.lock:
            return sorted(self._jobs.values(), key=lambda job: job.job)

    def unsettled_count(self) -> int:
        """Transactions not final yet (PREPARING, COMMITTING, ABORTING): the in-doubt ones."""
        with self.lock:
            return sum(1 for txn in self._txns.values() if not txn.state.is_final)

    def expired(self, job: str, below_batch: int) -> list[TransactionId]:
        """Final transactions of ``job`` with a batch below ``below_batch`` (for tombstones)."""
        with self.lock:
            return sorted(
                txn_id
                for txn_id, txn in self._txns.items()
                if txn_id.job == job and txn_id.batch < below_batch and txn.state.is_final
            )


def with_vote(txn: Transaction, vote: ParticipantVote) -> Transaction:
    """``txn`` with ``vote`` replacing the vote of the same sink."""
    votes = [v for v in txn.votes if v.sink != vote.sink]
    votes.append(vote)
    order = {ref.sink: i for i, ref in enumerate(txn.participants)}
    votes.sort(key=lambda v: order.get(v.sink, len(order)))
    return dataclasses.replace(txn, votes=tuple(votes))
