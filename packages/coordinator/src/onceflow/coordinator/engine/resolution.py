"""Forcing an outcome: the writer's AbortTransaction and the operator's ResolveTransaction.

The one rule is that a decided outcome is never flipped: COMMITTING/COMMITTED stay committed,
ABORTING/ABORTED stay aborted. Resolutions in the direction already decided are answered (and a
COMMIT kicks a delivery stuck in its backoff); the opposite direction is refused.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

from onceflow.coordinator.exceptions import ResolutionRefused, TransactionDecided, UnknownJob
from onceflow.coordinator.model import Resolution, Transaction, TransactionId, TransactionOutcome, TransactionState
from onceflow.core.logging import get_logger

if TYPE_CHECKING:
    from onceflow.coordinator.engine.engine import TwoPhaseCommitEngine

_log = get_logger(__name__)


class Resolver:
    """Applies aborts and operator resolutions to the engine's transactions."""

    def __init__(self, engine: TwoPhaseCommitEngine) -> None:
        self._engine = engine

    def abort(self, txn_id: TransactionId, reason: str, *, record_unknown: bool = False) -> TransactionOutcome:
        """Abort ``txn_id`` unless it passed its commit point.

        Steps:
            1. Under the lock: COMMITTING/COMMITTED cannot be aborted (:class:`TransactionDecided`);
               ABORTED answers ABORTED; an unknown transaction is already aborted (presumed abort),
               and with ``record_unknown`` an ABORTED record keeps the reason in the log.
            2. PREPARING: log ABORTING with ``reason``. The attempt's own flow, still collecting
               votes, sends the Aborts and logs ABORTED once its Prepare calls are over, so no
               Abort can overtake a later attempt of the same batch.
            3. Wait (bounded) for the transaction to settle and answer its state.
        """
        engine = self._engine
        book = engine.book
        # Step 1
        with book.lock:
            book.check_alive()
            current = book.txn(txn_id)
            if current is None:
                presumed = engine.get_transaction(txn_id.job, txn_id.batch)
                if presumed.state is TransactionState.COMMITTED:
                    raise TransactionDecided(str(txn_id), "COMMITTED", "abort")
                if record_unknown:
                    self._record_unknown_abort(txn_id, reason)
                return _outcome(TransactionState.ABORTED, presumed.reason if not record_unknown else reason)
            if current.state.is_commit:
                raise TransactionDecided(str(txn_id), current.state.value, "abort")
            # Step 2
            if current.state is TransactionState.PREPARING:
                aborting = dataclasses.replace(
                    current, state=TransactionState.ABORTING, reason=reason, updated_at=time.time()
                )
                book.write(aborting)
                _log.info("txn.aborting", txn=txn_id, job=txn_id.job, batch=txn_id.batch, reason=reason)
            settled = book.settled_event(txn_id)
        # Step 3
        settled.wait(engine.config.prepare_timeout + engine.config.abort_timeout)
        book.check_alive()
        final = book.txn(txn_id)
        if final is None:
            return _outcome(TransactionState.ABORTED, reason)
        return _outcome(final.state, final.reason)

    def resolve(self, txn_id: TransactionId, resolution: Resolution, reason: str) -> TransactionOutcome:
        """An operator forces ``txn_id`` to commit or abort.

        Steps:
            1. The job must be known (:class:`UnknownJob`).
            2. ABORT: as :meth:`abort`; an unknown transaction gets an explicit ABORTED record.
            3. COMMIT of COMMITTED: answered as is. COMMITTING: the delivery retries at once and
               the current state is answered.
            4. COMMIT of PREPARING: only when every participant has already voted yes; then log
               COMMITTING and deliver. Otherwise, and for aborted or unknown (presumed aborted)
               transactions, the resolution is refused.
        """
        engine = self._engine
        book = engine.book
        note = f"resolved by operator: {reason or 'no reason given'}"
        _log.info(
            "txn.resolve", txn=txn_id, job=txn_id.job, batch=txn_id.batch, resolution=resolution.value, why=reason
        )
        # Step 1
        if book.job(txn_id.job) is None:
            raise UnknownJob(txn_id.job)
        # Step 2
        if resolution is Resolution.ABORT:
            return self.abort(txn_id, note, record_unknown=True)
        with book.lock:
            book.check_alive()
            current = book.txn(txn_id)
            if current is None:
                presumed = engine.get_transaction(txn_id.job, txn_id.batch)
                if presumed.state is TransactionState.COMMITTED:
                    return _outcome(TransactionState.COMMITTED)
                raise TransactionDecided(str(txn_id), "ABORTED (unknown: presumed aborted)", "commit")
            # Step 3
            if current.state is TransactionState.COMMITTED:
                return _outcome(TransactionState.COMMITTED)
            if current.state is not TransactionState.COMMITTING:
                if current.state is not TransactionState.PREPARING:
                    raise TransactionDecided(str(txn_id), current.state.value, "commit")
                # Step 4
                missing = [ref.sink for ref in current.participants if not current.vote_of(ref.sink).prepared]
                if missing:
                    raise ResolutionRefused(
                        str(txn_id), f"is undecided and {', '.join(missing)} has not voted yes; only ABORT can end it"
                    )
                current = dataclasses.replace(
                    current, state=TransactionState.COMMITTING, reason=note, updated_at=time.time()
                )
                job = book.job(txn_id.job)
                assert job is not None
                last = max(job.last_committed_batch, txn_id.batch)
                book.write(current, dataclasses.replace(job, last_committed_batch=last))
        if current.state is TransactionState.COMMITTING:
            engine.start_delivery(current)
            engine.kick_delivery(txn_id)
            book.settled_event(txn_id).wait(min(engine.config.commit_wait, 5.0))
        book.check_alive()
        final = book.txn(txn_id) or current
        return _outcome(final.state, final.reason)

    def _record_unknown_abort(self, txn_id: TransactionId, reason: str) -> None:
        book = self._engine.book
        job = book.job(txn_id.job)
        if job is None:
            return
        now = time.time()
        book.write(
            Transaction(
                id=txn_id,
                state=TransactionState.ABORTED,
                writer_epoch=job.epoch,
                files=(),
                participants=job.participants,
                started_at=now,
                updated_at=now,
                reason=reason,
            )
        )


def _outcome(state: TransactionState, reason: str = "") -> TransactionOutcome:
    return TransactionOutcome(state, reason)
