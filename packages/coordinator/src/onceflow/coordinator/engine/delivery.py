"""Delivery of COMMIT decisions: retried with exponential backoff until every participant acks."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

from onceflow.contract import TransactionId
from onceflow.coordinator.engine.book import with_vote
from onceflow.coordinator.engine.config import EngineConfig
from onceflow.coordinator.engine.fanout import ParticipantFanout
from onceflow.coordinator.engine.state import TransactionStateManager
from onceflow.coordinator.metrics import CoordinatorMetrics
from onceflow.coordinator.model import Transaction
from onceflow.core.logging import get_logger

_log = get_logger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class _DeliveryParts:
    """What every delivery of one engine shares: the state, the fanout, the backoff and the callback."""

    state: TransactionStateManager
    fanout: ParticipantFanout
    config: EngineConfig
    on_delivered: Callable[[Transaction], None]
    metrics: CoordinatorMetrics | None


class CommitDelivery:
    """Brings one COMMITTING transaction to COMMITTED.

    The decision is final, so delivery never gives up while the coordinator runs: a participant
    that voted yes must eventually commit (Flink's contract). It stops only when the coordinator
    closes or fails; the next instance resumes from the COMMITTING record in the log.
    """

    def __init__(self, txn: Transaction, parts: _DeliveryParts) -> None:
        self.txn = txn
        self._state = parts.state
        self._fanout = parts.fanout
        self._config = parts.config
        self._on_delivered = parts.on_delivered
        self._metrics = parts.metrics
        self._wake = threading.Event()
        self._stopped = threading.Event()
        #: Set once every participant acked, before COMMITTED is logged: the caller's answer.
        self.acked = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"commit-{txn.id}", daemon=True)

    @property
    def id(self) -> TransactionId:
        return self.txn.id

    def start(self) -> None:
        self._thread.start()

    def kick(self) -> None:
        """Retry now instead of waiting out the backoff (an operator's ResolveTransaction COMMIT)."""
        self._wake.set()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the delivery's thread to end (after :meth:`stop`)."""
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        """Deliver, then hand the acked transaction to ``on_delivered``.

        Steps:
            1. Send Commit to every participant that has not acked, in parallel.
            2. Note the acks (in memory: re-sending Commit is harmless).
            3. All acked: set :attr:`acked` (the waiting caller answers COMMITTED now: every
               participant has committed), then call ``on_delivered`` (which logs COMMITTED, the
               bookkeeping record that ends the transaction) and stop.
            4. Otherwise wait the next backoff delay (or until kicked) and go back to Step 1.
        """
        txn = self.txn
        delays = self._config.commit_backoff.delays()
        attempt = 0
        try:
            while not self._stopped.is_set() and not self._state.stopped.is_set():
                attempt += 1
                # Step 1
                missing = txn.unacknowledged()
                results = self._fanout.commit_all(txn, missing, self._config.commit_call_timeout)
                # Step 2
                for result in results:
                    previous = txn.vote_of(result.sink)
                    vote = dataclasses.replace(previous, acknowledged=result.ok, error=result.error)
                    txn = with_vote(txn, vote)
                txn = dataclasses.replace(txn, updated_at=time.time())
                self._state.note(txn)
                # Step 3
                if not txn.unacknowledged():
                    self.acked.set()
                    self._on_delivered(txn)
                    return
                # Step 4
                if self._stopped.is_set():
                    return  # the coordinator closes: the next instance resumes from the log
                delay = next(delays)
                for result in results:
                    if not result.ok:
                        if self._metrics is not None:
                            self._metrics.commit_retries.inc()
                        _log.warning(
                            "txn.commit_retry",
                            **txn.id.log_fields(),
                            sink=result.sink,
                            attempt=attempt,
                            retry_in_s=round(delay, 3),
                            error=result.error,
                        )
                self._wake.wait(delay)
                self._wake.clear()
        except Exception as exc:  # the log failed (the state manager stopped too) or a bug: never die silently
            if self._stopped.is_set():
                return  # a call cut short by close (the fanout shut down): not a failure
            _log.exception("txn.delivery_failed", **txn.id.log_fields(), error=exc)


class CommitDeliveries:
    """The running deliveries, at most one per COMMITTING transaction.

    ``on_delivered`` gets each transaction once every participant acked; it calls :meth:`finish`
    and logs COMMITTED through the state manager.
    """

    def __init__(
        self,
        state: TransactionStateManager,
        fanout: ParticipantFanout,
        config: EngineConfig,
        on_delivered: Callable[[Transaction], None],
        *,
        metrics: CoordinatorMetrics | None = None,
    ) -> None:
        self._parts = _DeliveryParts(state, fanout, config, on_delivered, metrics)
        #: Guards the registry only (the state has its own lock, held by nobody else).
        self._lock = threading.Lock()
        self._running: dict[TransactionId, CommitDelivery] = {}
        self._decided_at: dict[TransactionId, float] = {}

    def start(self, txn: Transaction) -> threading.Event:
        """Start delivering the COMMITTING ``txn`` (no-op if it is already being delivered); returns the
        delivery's :attr:`CommitDelivery.acked` event."""
        with self._lock:
            running = self._running.get(txn.id)
            if running is not None:
                return running.acked
            delivery = CommitDelivery(txn, self._parts)
            self._running[txn.id] = delivery
            self._decided_at[txn.id] = time.monotonic()
        delivery.start()
        return delivery.acked

    def kick(self, txn_id: TransactionId) -> None:
        """Retry the delivery of ``txn_id`` now (if it runs) instead of waiting out its backoff."""
        with self._lock:
            delivery = self._running.get(txn_id)
        if delivery is not None:
            delivery.kick()

    def finish(self, txn_id: TransactionId) -> float | None:
        """Forget the delivery of ``txn_id``; returns when it started (``time.monotonic``), if it ran."""
        with self._lock:
            self._running.pop(txn_id, None)
            return self._decided_at.pop(txn_id, None)

    def stop_all(self, timeout: float) -> None:
        """Stop every delivery (the coordinator closes; the next instance resumes them) and wait up to
        ``timeout`` seconds in all for their threads, so none acts or logs after the coordinator closed."""
        with self._lock:
            running = list(self._running.values())
        for delivery in running:
            delivery.stop()
        deadline = time.monotonic() + timeout
        for delivery in running:
            delivery.join(max(0.0, deadline - time.monotonic()))
