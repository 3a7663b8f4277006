"""Forcing an outcome: the writer's AbortTransaction and the operator's ResolveTransaction.

The one rule is that a decided outcome is never flipped: COMMITTING/COMMITTED stay committed,
ABORTING/ABORTED stay aborted. Resolutions in the direction already decided are answered (and a
COMMIT kicks a delivery stuck in its backoff); the opposite direction is refused.
"""

from __future__ import annotations

from onceflow.contract import Resolution, TransactionId, TransactionOutcome, TransactionState
from onceflow.coordinator.engine.config import EngineConfig
from onceflow.coordinator.engine.delivery import CommitDeliveries
from onceflow.coordinator.engine.state import TransactionStateManager
from onceflow.coordinator.exceptions import UnknownJob
from onceflow.core.logging import get_logger

_log = get_logger(__name__)


class Resolver:
    """Applies aborts and operator resolutions through the state manager's transitions."""

    def __init__(self, state: TransactionStateManager, deliveries: CommitDeliveries, config: EngineConfig) -> None:
        self._state = state
        self._deliveries = deliveries
        self._config = config

    def abort(self, txn_id: TransactionId, reason: str, *, record_unknown: bool = False) -> TransactionOutcome:
        """Abort ``txn_id`` unless it passed its commit point.

        Steps:
            1. COMMITTING/COMMITTED cannot be aborted (:class:`TransactionDecided`); ABORTED answers
               ABORTED; an unknown transaction is already aborted (presumed abort), and with
               ``record_unknown`` an ABORTED record keeps the reason in the log.
            2. PREPARING: log ABORTING with ``reason``. The attempt's own flow, still collecting
               votes, sends the Aborts and logs ABORTED once its Prepare calls are over, so no
               Abort can overtake a later attempt of the same batch.
            3. Wait (bounded) for the transaction to settle and answer its state.
        """
        # Steps 1 and 2 (one transition of the state manager)
        requested = self._state.request_abort(txn_id, reason, record_unknown=record_unknown)
        if isinstance(requested, TransactionOutcome):
            return requested
        if requested.logged:
            _log.info("txn.aborting", **txn_id.log_fields(), reason=reason)
        # Step 3
        requested.settled.wait(self._config.prepare_timeout + self._config.abort_timeout)
        self._state.check_alive()
        final = self._state.txn(txn_id)
        if final is None:
            return TransactionOutcome(TransactionState.ABORTED, reason)
        return TransactionOutcome(final.state, final.reason)

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
        note = f"resolved by operator: {reason or 'no reason given'}"
        _log.info("txn.resolve", **txn_id.log_fields(), resolution=resolution.value, why=reason)
        # Step 1
        if self._state.job(txn_id.job) is None:
            raise UnknownJob(txn_id.job)
        # Step 2
        if resolution is Resolution.ABORT:
            return self.abort(txn_id, note, record_unknown=True)
        # Steps 3 and 4 (the transition, if any, is the state manager's)
        committing = self._state.force_commit(txn_id, note)
        if isinstance(committing, TransactionOutcome):
            return committing
        self._deliveries.start(committing)
        self._deliveries.kick(txn_id)
        self._state.settled_event(txn_id).wait(min(self._config.commit_wait, 5.0))
        self._state.check_alive()
        final = self._state.txn(txn_id) or committing
        return TransactionOutcome(final.state, final.reason)
