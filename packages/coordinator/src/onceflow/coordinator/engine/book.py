"""The coordinator's state in memory: jobs, transactions, and who waits for a transaction to settle.

A plain index, not thread-safe and not durable on its own: the
:class:`~onceflow.coordinator.engine.state.TransactionStateManager` guards it with its lock and
applies a record here only after the transaction log made it durable.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence

from onceflow.contract import ParticipantVote, TransactionId, TransactionState
from onceflow.coordinator.log.records import LogRecord, Tombstone
from onceflow.coordinator.model import JobState, Transaction


class TransactionBook:
    """Jobs and transactions by key; every transaction that is not final has a *settled* event.

    The event is set once the transaction is final (or removed), so duplicate requests can join an
    attempt instead of restarting it.
    """

    def __init__(self) -> None:
        self._jobs: dict[str, JobState] = {}
        self._txns: dict[TransactionId, Transaction] = {}
        self._settled: dict[TransactionId, threading.Event] = {}

    # -- changes -----------------------------------------------------------------------------

    def apply(self, record: LogRecord) -> None:
        """Store ``record`` (the last record of a key wins); a final transaction wakes its waiters."""
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

    def replace_votes(self, txn: Transaction) -> None:
        """Take the votes/acks of ``txn`` unless the stored transaction moved on (another state or attempt)."""
        current = self._txns.get(txn.id)
        if current is not None and (current.state, current.attempt) == (txn.state, txn.attempt):
            self._txns[txn.id] = dataclasses.replace(current, votes=txn.votes, updated_at=txn.updated_at)

    def add_vote(self, txn: Transaction, vote: ParticipantVote) -> None:
        """Take one participant's ``vote`` of attempt ``txn`` unless the stored transaction moved on."""
        current = self._txns.get(txn.id)
        if current is not None and (current.state, current.attempt) == (txn.state, txn.attempt):
            self._txns[txn.id] = with_vote(current, vote)

    def wake_all(self) -> None:
        """Wake every waiter (the coordinator stopped serving)."""
        for event in self._settled.values():
            event.set()

    # -- queries -----------------------------------------------------------------------------

    def job(self, job: str) -> JobState | None:
        return self._jobs.get(job)

    def txn(self, txn_id: TransactionId) -> Transaction | None:
        return self._txns.get(txn_id)

    def settled_event(self, txn_id: TransactionId) -> threading.Event:
        """Set once ``txn_id`` is final (already set if it is final or unknown)."""
        event = self._settled.get(txn_id)
        if event is None:
            event = threading.Event()
            event.set()
        return event

    def transactions(self, job: str | None = None, states: Sequence[TransactionState] = ()) -> list[Transaction]:
        """Transactions of ``job`` (all jobs if None) in ``states`` (all if empty), by job then newest batch."""
        selected = [
            txn
            for txn in self._txns.values()
            if (job is None or txn.id.job == job) and (not states or txn.state in states)
        ]
        selected.sort(key=lambda txn: (txn.id.job, -txn.id.batch))
        return selected

    def jobs(self) -> list[JobState]:
        return sorted(self._jobs.values(), key=lambda job: job.job)

    def unsettled_count(self) -> int:
        """Transactions not final yet (PREPARING, COMMITTING, ABORTING): the in-doubt ones."""
        return sum(1 for txn in self._txns.values() if not txn.state.is_final)

    def expired(self, job: str, below_batch: int) -> list[TransactionId]:
        """Final transactions of ``job`` with a batch below ``below_batch`` (for tombstones)."""
        return sorted(
            txn_id
            for txn_id, txn in self._txns.items()
            if txn_id.job == job and txn_id.batch < below_batch and txn.state.is_final
        )


def with_vote(txn: Transaction, vote: ParticipantVote) -> Transaction:
    """``txn`` with ``vote`` replacing the vote of the same sink."""
    votes = [v for v in txn.votes if v.sink != vote.sink]
    votes.append(vote)
    order = {ref.name: i for i, ref in enumerate(txn.participants)}
    votes.sort(key=lambda v: order.get(v.sink, len(order)))
    return dataclasses.replace(txn, votes=tuple(votes))
