"""The abort phase: Abort sent to every participant (best effort), then ABORTED logged."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence

from onceflow.contract import TransactionOutcome, TransactionState
from onceflow.coordinator.engine.fanout import ParticipantFanout
from onceflow.coordinator.engine.state import TransactionStateManager
from onceflow.coordinator.metrics import CoordinatorMetrics
from onceflow.coordinator.model import Transaction
from onceflow.core.logging import get_logger

_log = get_logger(__name__)


class AbortPhase:
    """Finishes ABORTING transactions: for an attempt that was refused, and for recovery.

    Presumed abort needs no acks: a participant that missed its Abort asks on its own recovery and
    hears ABORTED, so ABORTED is logged whatever the participants answered.
    """

    def __init__(
        self, state: TransactionStateManager, fanout: ParticipantFanout, timeout: float, metrics: CoordinatorMetrics
    ) -> None:
        self._state = state
        self._fanout = fanout
        self._timeout = timeout
        self._metrics = metrics
        self._background: list[threading.Thread] = []

    def run(self, txn: Transaction) -> TransactionOutcome:
        """Send Abort for the ABORTING ``txn`` to every participant, log ABORTED, answer ABORTED."""
        results = self._fanout.abort_all(txn, self._timeout)
        acks = {result.sink: result for result in results}
        votes = tuple(
            dataclasses.replace(vote, acknowledged=acks[vote.sink].ok, error=acks[vote.sink].error or vote.error)
            if vote.sink in acks
            else vote
            for vote in (txn.vote_of(ref.name) for ref in txn.participants)
        )
        final = dataclasses.replace(txn, state=TransactionState.ABORTED, votes=votes, updated_at=time.time())
        refused = self._state.complete_abort(final)
        if refused is not None:  # superseded or already finished
            return TransactionOutcome(refused, txn.reason)
        self._metrics.transactions.labels("aborted").inc()
        self._metrics.transaction_seconds.observe(max(0.0, final.updated_at - final.started_at))
        _log.info("txn.aborted", **txn.id.log_fields(), reason=txn.reason)
        return TransactionOutcome(TransactionState.ABORTED, txn.reason)

    def finish_in_background(self, aborting: Sequence[Transaction]) -> None:
        """:meth:`run` each of ``aborting`` in turn on a background thread (recovery), until the
        coordinator stops: the next instance finishes the rest from the log."""
        thread = threading.Thread(target=self._finish, args=(list(aborting),), name="recovery-aborts", daemon=True)
        self._background.append(thread)
        thread.start()

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds in all for the background aborts (once the state manager
        stopped, each ends after at most the Abort calls under way), so none acts or logs after close."""
        deadline = time.monotonic() + timeout
        for thread in self._background:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _finish(self, aborting: list[Transaction]) -> None:
        for txn in aborting:
            if self._state.stopped.is_set():
                return
            try:
                self.run(txn)
            except Exception as exc:  # the log failed (the coordinator stops) or a bug: say so
                if self._state.stopped.is_set():
                    return  # cut short by close, or by a log failure the state manager reported
                _log.exception("recovery.abort_failed", **txn.id.log_fields(), error=exc)
                return
