"""Recovery of a coordinator instance from the transaction log (docs/design.md, "The coordinator")."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from onceflow.contract import TransactionState
from onceflow.coordinator.engine.abort import AbortPhase
from onceflow.coordinator.engine.delivery import CommitDeliveries
from onceflow.coordinator.engine.state import TransactionStateManager
from onceflow.coordinator.model import JobState
from onceflow.core.logging import get_logger

_log = get_logger(__name__)

PRESUMED_ABORT_REASON = "the coordinator restarted before deciding: presumed abort"


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What recovery found and set in motion."""

    records: int
    jobs: int
    transactions: int
    #: COMMITTING transactions whose Commit is being re-sent.
    committing: int
    #: ABORTING transactions whose Abort is being re-sent.
    aborting: int
    #: PREPARING transactions (no decision logged) now aborted.
    presumed_aborted: int


def recover(
    state: TransactionStateManager,
    aborts: AbortPhase,
    deliveries: CommitDeliveries,
    verify: Callable[[Sequence[JobState]], object] | None = None,
) -> RecoveryReport:
    """Rebuild the state from the log and finish what the previous instance left undone.

    Steps:
        1. Replay: open the log (fencing earlier instances; a log that is missing, truncated or
           unsafe is refused) and apply every record in log order (the last record of a key wins).
           Then ``verify`` the jobs (the participants' commit records, see
           :mod:`~onceflow.coordinator.engine.consistency`): a log behind them is refused before
           anything is presumed aborted.
        2. PREPARING (no decision was logged): presumed abort. Log ABORTING for all of them in one
           append, with the reason, so the decision is explicit; Step 3 finishes them.
        3. ABORTING: on a background thread, send Abort to every participant (best effort: a
           participant that misses it asks on its own recovery and hears ABORTED), then log
           ABORTED. Until then a retry of the batch joins the abort instead of racing it.
        4. COMMITTING: the decision is final. Re-send Commit to every participant in the background,
           retrying with backoff until each acks; then log COMMITTED (END) and delete the staged files.
    """
    # Step 1
    records = state.replay()
    if verify is not None:
        verify(state.jobs())
    unfinished = state.in_doubt()
    # Step 2
    presumed = state.abort_undecided(PRESUMED_ABORT_REASON)
    aborting = presumed + [txn for txn in unfinished if txn.state is TransactionState.ABORTING]
    committing = [txn for txn in unfinished if txn.state is TransactionState.COMMITTING]
    for txn in aborting:
        _log.info("recovery.abort", **txn.id.log_fields(), reason=txn.reason)
    for txn in committing:
        _log.info("recovery.commit", **txn.id.log_fields(), epoch=txn.writer_epoch)
    # Step 3
    if aborting:
        aborts.finish_in_background(aborting)
    # Step 4
    for txn in committing:
        deliveries.start(txn)
    report = RecoveryReport(
        records=records,
        jobs=len(state.jobs()),
        transactions=len(state.transactions()),
        committing=len(committing),
        aborting=len(aborting) - len(presumed),
        presumed_aborted=len(presumed),
    )
    _log.info("recovery.done", **dataclasses.asdict(report))
    return report
