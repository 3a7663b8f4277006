"""``TimeoutSweeper``: the coordinator's periodic work (stuck completions, timeouts, idle ids)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from onceflow.broker.transactions.completion import TransactionCompleter
from onceflow.broker.transactions.state import KafkaTransactionState
from onceflow.broker.transactions.store import TransactionStore
from onceflow.core.logging import get_logger

log = get_logger(__name__)


@dataclass
class SweepReport:
    """What one sweep did, by transactional id."""

    completed: list[str] = field(default_factory=list)
    timed_out: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)


class TimeoutSweeper:
    """Finishes prepared transactions, aborts timed-out ones, and forgets idle transactional ids.

    Guarantees:

    * A prepared transaction is completed with its logged outcome, never the other one.
    * An Ongoing transaction whose start is more than its timeout ago is aborted, and its epoch is
      bumped: the owner's next call with the old epoch is fenced, but (KIP-588) the owner may
      re-initialise with the old epoch and go on.
    * An idle id (Empty, CompleteCommit, CompleteAbort) not touched for ``expiration_ms`` is removed
      from the log; a later InitProducerId for it starts afresh with a new producer id.
    """

    def __init__(
        self,
        store: TransactionStore,
        completer: TransactionCompleter,
        now_ms: Callable[[], int],
        expiration_ms: int,
    ) -> None:
        self._store = store
        self._completer = completer
        self._now_ms = now_ms
        self._expiration_ms = expiration_ms

    def complete_prepared(self, report: SweepReport | None = None) -> SweepReport:
        """Recovery (and retry): re-run markers and offset completion of every prepared transaction.

        Steps:

        1. Find every transaction in PrepareCommit or PrepareAbort (left by a crash or a failed
           marker write after the commit point).
        2. Write its markers again, complete its group offsets, and log CompleteCommit/CompleteAbort.
           A failure leaves it prepared for the next sweep.
        """
        report = report or SweepReport()
        # Step 1
        prepared = [metadata for metadata in self._store if metadata.state.is_prepared]
        for metadata in prepared:
            # Step 2
            if self._completer.try_complete(metadata):
                report.completed.append(metadata.transactional_id)
            else:
                report.deferred.append(metadata.transactional_id)
        return report

    def sweep(self) -> SweepReport:
        """One round of periodic work.

        Steps:

        1. Complete prepared transactions (see ``complete_prepared``).
        2. Abort each Ongoing transaction older than its timeout: log PrepareAbort with the epoch
           bumped (the old epoch kept as the previous one), write ABORT markers at the new epoch,
           discard staged offsets, log CompleteAbort.
        3. Remove idle ids whose last update is ``expiration_ms`` old.
        """
        # Step 1
        report = self.complete_prepared()
        now = self._now_ms()
        for metadata in self._store:
            # Step 2
            if metadata.state is KafkaTransactionState.ONGOING and metadata.start_time_ms + metadata.timeout_ms < now:
                fenced = self._completer.fence(metadata, recoverable=True)
                log.info(
                    "txn.timed_out",
                    **metadata.log_fields(),
                    new_epoch=fenced.producer_epoch,
                    age_ms=now - metadata.start_time_ms,
                    timeout_ms=metadata.timeout_ms,
                )
                report.timed_out.append(metadata.transactional_id)
                if not self._completer.try_complete(fenced):
                    report.deferred.append(metadata.transactional_id)
            # Step 3
            elif metadata.state.is_idle and now - metadata.last_update_ms >= self._expiration_ms:
                metadata.dead()  # checks the transition
                self._store.remove(metadata.transactional_id)
                log.info(
                    "txn.id_expired",
                    **metadata.log_fields(),
                    idle_ms=now - metadata.last_update_ms,
                )
                report.expired.append(metadata.transactional_id)
        return report
