"""Recovery of a coordinator instance from the transaction log (docs/design.md, "The coordinator")."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from onceflow.coordinator.log.records import LogRecord
from onceflow.coordinator.model import Transaction, TransactionState
from onceflow.core.logging import get_logger

if TYPE_CHECKING:
    from onceflow.coordinator.engine.engine import TwoPhaseCommitEngine

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


def recover(engine: TwoPhaseCommitEngine, records: Sequence[LogRecord]) -> RecoveryReport:
    """Rebuild the engine's state from ``records`` and finish what the previous instance left undone.

    Steps:
        1. Replay: apply every record in log order (the last record of a key wins).
        2. PREPARING (no decision was logged): presumed abort. Log ABORTING for all of them in one
           append, with the reason, so the decision is explicit; Step 3 finishes them.
        3. ABORTING: on a background thread, send Abort to every participant (best effort: a
           participant that misses it asks on its own recovery and hears ABORTED), then log
           ABORTED. Until then a retry of the batch joins the abort instead of racing it.
        4. COMMITTING: the decision is final. Re-send Commit to every participant in the background,
           retrying with backoff until each acks; then log COMMITTED (END) and delete the staged files.
    """
    book = engine.book
    # Step 1
    book.load(records)
    unfinished = book.transactions(
        states=(TransactionState.PREPARING, TransactionState.ABORTING, TransactionState.COMMITTING)
    )
    # Step 2
    now = time.time()
    presumed = [
        dataclasses.replace(txn, state=TransactionState.ABORTING, reason=PRESUMED_ABORT_REASON, updated_at=now)
        for txn in unfinished
        if txn.state is TransactionState.PREPARING
    ]
    if presumed:
        book.write(*presumed)
    aborting = presumed + [txn for txn in unfinished if txn.state is TransactionState.ABORTING]
    committing = [txn for txn in unfinished if txn.state is TransactionState.COMMITTING]
    for txn in aborting:
        _log.info("recovery.abort", txn=txn.id, job=txn.id.job, batch=txn.id.batch, reason=txn.reason)
    for txn in committing:
        _log.info("recovery.commit", txn=txn.id, job=txn.id.job, batch=txn.id.batch, epoch=txn.writer_epoch)
    # Step 3
    if aborting:
        threading.Thread(target=_finish_aborts, args=(engine, aborting), name="recovery-aborts", daemon=True).start()
    # Step 4
    for txn in committing:
        engine.start_delivery(txn)
    report = RecoveryReport(
        records=len(records),
        jobs=len(book.jobs()),
        transactions=len(book.transactions()),
        committing=len(committing),
        aborting=len(aborting) - len(presumed),
        presumed_aborted=len(presumed),
    )
    _log.info("recovery.done", **dataclasses.asdict(report))
    return report


def _finish_aborts(engine: TwoPhaseCommitEngine, aborting: list[Transaction]) -> None:
    for txn in aborting:
        if engine.stopped.is_set():
            return
        try:
            engine.abort_phase(txn)
        except Exception as exc:  # the log failed (the engine stops) or a bug: say so
            _log.exception("recovery.abort_failed", txn=txn.id, job=txn.id.job, batch=txn.id.batch, error=exc)
            return
