"""The presumed-abort two-phase-commit engine: one transaction per micro-batch, ``<job>:<batch>``.

A plain domain object (no gRPC): the servicer in :mod:`onceflow.coordinator.servicer` adapts it,
tests and benchmarks drive it directly with in-process participants.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence

from onceflow.contract import ParticipantRef, Resolution, TransactionId, TransactionOutcome, TransactionState
from onceflow.contract.staging import StagedFile
from onceflow.coordinator import validation
from onceflow.coordinator.engine.abort import AbortPhase
from onceflow.coordinator.engine.config import EngineConfig
from onceflow.coordinator.engine.consistency import check_against_participants
from onceflow.coordinator.engine.delivery import CommitDeliveries
from onceflow.coordinator.engine.fanout import ParticipantFanout
from onceflow.coordinator.engine.recovery import RecoveryReport, recover
from onceflow.coordinator.engine.resolution import Resolver
from onceflow.coordinator.engine.state import TransactionStateManager
from onceflow.coordinator.engine.transitions import Answered, InFlight
from onceflow.coordinator.engine.votes import no_vote_reason, vote_of, voted_yes
from onceflow.coordinator.exceptions import WriterFenced
from onceflow.coordinator.log.base import TransactionLog
from onceflow.coordinator.metrics import CoordinatorMetrics
from onceflow.coordinator.model import JobState, Transaction
from onceflow.coordinator.participants.base import ParticipantConnector
from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.core.logging import get_logger

_log = get_logger(__name__)

#: Deletes the staged files of ``(job, batch)`` once its transaction has ended.
StagingCollector = Callable[[str, int], object]


class TwoPhaseCommitEngine:
    """Presumed-abort 2PC across the sink participants of each job (docs/design.md, "The coordinator").

    It orchestrates: it calls the participants and waits for them, while every change of a job or a
    transaction is a transition of its :class:`TransactionStateManager` (the only holder of the
    lock and the only writer of the log), which the resolver, recovery and commit delivery use too.

    Guarantees:

    - a transaction commits only if every participant voted yes and its writer was not fenced
      before the decision was logged; the logged decision is final and is delivered until acked;
    - CommitTransaction is idempotent per ``<job>:<batch>``: a committed batch answers COMMITTED,
      an attempt in flight is joined, an aborted batch may be retried as a new attempt;
    - a transaction the log does not know is ABORTED (presumed abort);
    - when the log fails or a newer coordinator fences this one, every call raises
      :class:`CoordinatorStopped` and :attr:`stopped` is set: the process must exit.
    """

    def __init__(
        self,
        log: TransactionLog,
        connector: ParticipantConnector,
        config: EngineConfig | None = None,
        *,
        metrics: CoordinatorMetrics | None = None,
        staging_collector: StagingCollector | None = None,
        faults: FaultInjector = NO_FAULTS,
    ) -> None:
        self.config = config or EngineConfig()
        self._faults = faults
        self.state = TransactionStateManager(log)
        self.metrics = metrics or CoordinatorMetrics()
        self.fanout = ParticipantFanout(connector, self.config.max_parallel_calls)
        self._staging_collector = staging_collector
        self._aborts = AbortPhase(self.state, self.fanout, self.config.abort_timeout, self.metrics)
        self._deliveries = CommitDeliveries(self.state, self.fanout, self.config, self._delivered, metrics=self.metrics)
        self._resolver = Resolver(self.state, self._deliveries, self.config)
        self.metrics.track_in_doubt(self.state.in_doubt_count)

    @property
    def stopped(self) -> threading.Event:
        """Set once the engine no longer serves (closed, fenced, or its log failed)."""
        return self.state.stopped

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> RecoveryReport:
        """Open the log (fencing earlier coordinator instances), replay it, check it against the
        participants' commit records, and recover."""

        def verify(jobs: Sequence[JobState]) -> int:
            timeout = self.config.commit_call_timeout
            return check_against_participants(self.state.log_description, jobs, self.fanout.connector, timeout)

        return recover(self.state, self._aborts, self._deliveries, verify)

    def close(self) -> None:
        """Stop serving. COMMITTING and ABORTING transactions stay in the log; the next instance
        finishes them."""
        self.state.close()
        # a delivery waits at most one Commit call (commit_call_timeout) before it sees the stop, and
        # recovery's aborts at most one Abort fan-out (abort_timeout)
        self._deliveries.stop_all(timeout=self.config.commit_call_timeout + 1.0)
        self._aborts.join(timeout=self.config.abort_timeout + 1.0)
        self.fanout.close()

    # -- writers and participants ---------------------------------------------------------------

    def register_writer(self, job: str, writer_id: str) -> JobState:
        """Bump the job's writer epoch durably (fencing the previous writer) and return the job's state."""
        validation.check_job(job)
        validation.check_writer_id(writer_id)
        registered = self.state.register_writer(job, writer_id)
        _log.info(
            "writer.registered",
            job=job,
            epoch=registered.epoch,
            writer=writer_id,
            last_committed_batch=registered.last_committed_batch,
        )
        return registered

    def register_participants(self, job: str, epoch: int, participants: Sequence[ParticipantRef]) -> JobState:
        """Replace the job's participants and bindings (new attempts use them; running ones keep theirs).

        Steps:
            1. Check the request and that ``epoch`` is the job's writer.
            2. Have every participant with bindings check (and create) its tables and topics, and every
               shard of a sharded sink check that it serves that shard: a refusal
               (:class:`BindingsRefused`) fails the registration, so the job fails before any batch.
            3. Log the job's new participants (if ``epoch`` is still the job's writer).
        """
        # Step 1
        validation.check_job(job)
        refs = validation.check_participants(participants)
        self.state.check_writer(job, epoch)
        # Step 2
        for ref in refs:
            if ref.bindings or ref.shard.is_sharded:
                self.fanout.connector.connect(ref).prepare_bindings(job, self.config.prepare_timeout)
        # Step 3
        registered = self.state.set_participants(job, epoch, refs)
        _log.info("participants.registered", job=job, epoch=epoch, sinks=",".join(r.name for r in refs))
        return registered

    # -- two-phase commit ------------------------------------------------------------------------

    def commit_transaction(self, job: str, epoch: int, batch: int, files: Sequence[StagedFile]) -> TransactionOutcome:
        """Run presumed-abort 2PC for ``<job>:<batch>`` and answer its outcome.

        Steps:
            1. Admission and idempotency (one transition of the state manager): the writer epoch
               must be current; a COMMITTED batch answers COMMITTED; an attempt that is not final is
               joined, not restarted; a batch older than the last committed one is presumed aborted.
               Otherwise a new PREPARING attempt is logged, with a snapshot of the job's participants.
            2. Send Prepare to every participant in parallel, bounded by ``prepare_timeout``.
            3. Decide (one transition). All yes, and the writer not fenced meanwhile: log COMMITTING
               (the commit point). Anything else: log ABORTING, send Abort to every participant, log
               ABORTED, and answer ABORTED with a reason naming each participant and its cause.
            4. Deliver COMMIT in the background, retrying each participant with exponential backoff
               until it acks. The caller waits for the acks at most ``commit_wait``: it then gets
               COMMITTED as soon as every participant acked, or COMMITTING if one is still missing.
               COMMITTING is final too (the decision is durable), so a writer may treat it as
               committed.
            5. Once every participant acked (on the delivery thread, while the caller already has
               its answer): log COMMITTED (END) with tombstones of transactions older than the
               retention, in the same log append as the next transition if one comes within
               ``end_linger`` (group commit), else alone; then delete the staged files. END is
               bookkeeping, not part of the decision: a restart before it finds COMMITTING,
               delivers COMMIT again (every participant's commit is idempotent) and logs it then.
               GetTransaction shows COMMITTED from then on, before the log has it.
            6. An ABORTED answer for a writer that a newer writer fenced while the attempt ran raises
               :class:`WriterFenced` instead: that writer must stop, not re-run the batch.
        """
        txn_id = TransactionId(validation.check_job(job), validation.check_batch(batch))
        checked = validation.check_files(files)
        while True:
            # Step 1
            admitted = self._admit(txn_id, epoch, checked)
            if isinstance(admitted, TransactionOutcome):
                return admitted
            if isinstance(admitted, InFlight):
                outcome = self._join(admitted, epoch)
                if outcome is not None:
                    return self._fenced_or(outcome, txn_id.job, epoch)
                continue
            # Steps 2 to 5
            return self._fenced_or(self._run_attempt(admitted), txn_id.job, epoch)

    def _fenced_or(self, outcome: TransactionOutcome, job: str, epoch: int) -> TransactionOutcome:
        """Step 6: ``outcome``, unless it is an abort and the writer has been fenced meanwhile."""
        if outcome.state is TransactionState.ABORTED:
            current = self.state.job(job)
            if current is not None and current.epoch > epoch:
                raise WriterFenced(job, epoch, current.epoch)
        return outcome

    def _admit(
        self, txn_id: TransactionId, epoch: int, files: tuple[StagedFile, ...]
    ) -> Transaction | InFlight | TransactionOutcome:
        admission = self.state.begin(txn_id, epoch, files, log_preparing=self.config.log_preparing)
        if isinstance(admission, Answered):
            if admission.recommitted:
                self.collect_staging(txn_id)  # a replayed batch staged its files again
            return admission.outcome
        if isinstance(admission, InFlight):
            return admission
        attempt = admission.txn
        _log.info(
            "txn.preparing",
            **txn_id.log_fields(),
            epoch=epoch,
            attempt=attempt.attempt,
            files=len(files),
            rows=sum(f.count for f in files),
        )
        self._faults.at("prepare-logged", txn=txn_id)
        return attempt

    def _join(self, join: InFlight, epoch: int) -> TransactionOutcome | None:
        """Wait for an attempt under way; None means "start a new attempt" (it was an older writer's, aborted)."""
        if join.txn.state is TransactionState.COMMITTING:
            wait = self.config.commit_wait
        else:
            wait = self.config.prepare_timeout + self.config.abort_timeout + self.config.commit_wait
        join.settled.wait(wait)
        self.state.check_alive()
        current = self.state.txn(join.txn.id)
        if current is None:
            return TransactionOutcome(TransactionState.ABORTED, "unknown transaction: presumed aborted")
        if current.state is TransactionState.ABORTED and current.writer_epoch < epoch:
            return None
        return TransactionOutcome(current.state, current.reason)

    def _run_attempt(self, txn: Transaction) -> TransactionOutcome:
        # Step 2
        started = time.monotonic()
        results = self.fanout.prepare_all(
            txn, self.config.prepare_timeout, on_result=lambda r: self.state.note_vote(txn, vote_of(r))
        )
        self.metrics.prepare_seconds.observe(time.monotonic() - started)
        votes = tuple(vote_of(result) for result in results)
        reasons = [no_vote_reason(result) for result in results if not voted_yes(result)]
        self._faults.at("votes-collected", txn=txn.id)
        # Step 3
        decided = self.state.decide(txn, votes, reasons)
        if isinstance(decided, TransactionOutcome):
            return decided
        if decided.state is TransactionState.ABORTING:
            return self._aborts.run(decided)
        if decided.state is TransactionState.COMMITTING:
            _log.info("txn.committing", **txn.id.log_fields(), epoch=txn.writer_epoch)
            self._faults.at("commit-logged", txn=txn.id)
            # Step 4
            acked = self._deliveries.start(decided)
            acked.wait(self.config.commit_wait)
            self.state.check_alive()
            if acked.is_set():
                return TransactionOutcome(TransactionState.COMMITTED)
        self.state.check_alive()
        final = self.state.txn(txn.id) or decided
        return TransactionOutcome(final.state, final.reason)

    def _delivered(self, txn: Transaction) -> None:
        # Step 5
        self._faults.at("commit-delivered", txn=txn.id)
        now = time.time()
        decided_at = self._deliveries.finish(txn.id)
        final = dataclasses.replace(txn, state=TransactionState.COMMITTED, updated_at=now)
        tombstoned = self.state.complete_commit(final, self.config.retain_batches)
        if tombstoned is None:  # no longer COMMITTING (superseded): nothing was logged
            return
        if decided_at is not None:
            self.metrics.commit_seconds.observe(time.monotonic() - decided_at)
        self.metrics.transactions.labels("committed").inc()
        self.metrics.transaction_seconds.observe(max(0.0, now - final.started_at))
        _log.info("txn.committed", **txn.id.log_fields(), tombstoned=tombstoned)
        if self.state.flush_ended(self.config.end_linger):
            self.collect_staging(txn.id)

    def collect_staging(self, txn_id: TransactionId) -> None:
        """Delete the staged files of ``txn_id`` in the background (best effort; logged on failure)."""
        collector = self._staging_collector
        if collector is None:
            return

        def collect() -> None:
            try:
                collector(txn_id.job, txn_id.batch)
            except Exception as exc:
                _log.warning("staging.gc_failed", **txn_id.log_fields(), error=exc)

        self.fanout.submit(collect)

    # -- aborts, queries, operators --------------------------------------------------------------

    def abort_transaction(self, job: str, epoch: int, batch: int, reason: str = "") -> TransactionOutcome:
        """The writer gives up on a batch: abort it unless it passed its commit point."""
        txn_id = TransactionId(validation.check_job(job), validation.check_batch(batch))
        validation.check_reason(reason)
        self.state.check_writer(job, epoch)
        return self._resolver.abort(txn_id, f"aborted by the writer (epoch {epoch}): {reason or 'no reason given'}")

    def resolve_transaction(self, job: str, batch: int, resolution: Resolution, reason: str = "") -> TransactionOutcome:
        """Operator action on a stuck transaction; see :class:`~onceflow.coordinator.engine.resolution.Resolver`."""
        txn_id = TransactionId(validation.check_job(job), validation.check_batch(batch))
        validation.check_reason(reason)
        return self._resolver.resolve(txn_id, resolution, reason)

    def get_transaction(self, job: str, batch: int) -> Transaction:
        """The transaction; an unknown one is reported ABORTED (presumed abort)."""
        return self.state.lookup(TransactionId(validation.check_job(job), validation.check_batch(batch)))

    def list_transactions(
        self, job: str | None = None, states: Sequence[TransactionState] = (), limit: int = 0
    ) -> list[Transaction]:
        """Transactions by job, newest batch first; ``limit`` 0 means the default page size."""
        if job:
            validation.check_job(job)
        self.state.check_alive()
        size = min(limit or self.config.list_limit, self.config.max_list_limit)
        return self.state.transactions(job or None, states)[:size]
