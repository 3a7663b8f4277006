"""The presumed-abort two-phase-commit engine: one transaction per micro-batch, ``<job>:<batch>``.

A plain domain object (no gRPC): the servicer in :mod:`onceflow.coordinator.service` adapts it,
tests and benchmarks drive it directly with in-process participants.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from onceflow.coordinator import validation
from onceflow.coordinator.engine.book import TransactionBook
from onceflow.coordinator.engine.config import EngineConfig
from onceflow.coordinator.engine.delivery import CommitDelivery
from onceflow.coordinator.engine.fanout import ParticipantFanout
from onceflow.coordinator.engine.recovery import RecoveryReport, recover
from onceflow.coordinator.engine.resolution import Resolver
from onceflow.coordinator.engine.votes import no_vote_reason, ordered, vote_of, voted_yes
from onceflow.coordinator.exceptions import NoParticipants, UnknownEpoch, UnknownJob, WriterFenced
from onceflow.coordinator.log.base import TransactionLog
from onceflow.coordinator.log.records import Tombstone
from onceflow.coordinator.metrics import CoordinatorMetrics
from onceflow.coordinator.model import (
    JobState,
    ParticipantRef,
    ParticipantVote,
    Resolution,
    StagedFile,
    Transaction,
    TransactionId,
    TransactionOutcome,
    TransactionState,
)
from onceflow.coordinator.participants.base import ParticipantConnector
from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.core.logging import get_logger

_log = get_logger(__name__)

#: Deletes the staged files of ``(job, batch)`` once its transaction has ended.
StagingCollector = Callable[[str, int], object]


@dataclass(frozen=True, slots=True)
class _Join:
    """An attempt already under way (or being delivered): wait for it instead of starting another."""

    txn: Transaction
    settled: threading.Event


class TwoPhaseCommitEngine:
    """Presumed-abort 2PC across the sink participants of each job (docs/design.md, "The coordinator").

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
        self.book = TransactionBook(log)
        self.metrics = metrics or CoordinatorMetrics()
        self.fanout = ParticipantFanout(connector, self.config.max_parallel_calls)
        self._staging_collector = staging_collector
        self._deliveries: dict[TransactionId, CommitDelivery] = {}
        self._decided_at: dict[TransactionId, float] = {}
        self._resolver = Resolver(self)
        self.metrics.track_in_doubt(self.book.unsettled_count)

    @property
    def stopped(self) -> threading.Event:
        """Set once the engine no longer serves (closed, fenced, or its log failed)."""
        return self.book.failed

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> RecoveryReport:
        """Open the log (fencing earlier coordinator instances), replay it and recover."""
        records = self.book.log.open()
        return recover(self, records)

    def close(self) -> None:
        """Stop serving. COMMITTING transactions stay in the log; the next instance delivers them."""
        self.book.close()
        with self.book.lock:
            deliveries = list(self._deliveries.values())
        for delivery in deliveries:
            delivery.stop()
        self.fanout.close()
        self.book.log.close()

    # -- writers and participants ---------------------------------------------------------------

    def register_writer(self, job: str, writer_id: str) -> JobState:
        """Bump the job's writer epoch durably (fencing the previous writer) and return the job's state."""
        validation.check_job(job)
        validation.check_writer_id(writer_id)
        with self.book.lock:
            self.book.check_alive()
            current = self.book.job(job) or JobState(job)
            registered = dataclasses.replace(current, epoch=current.epoch + 1, writer_id=writer_id)
            self.book.write(registered)
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
            2. Have every participant with bindings check (and create) its tables and topics: a refusal
               (:class:`BindingsRefused`) fails the registration, so the job fails before any batch.
            3. Log the job's new participants.
        """
        # Step 1
        validation.check_job(job)
        refs = validation.check_participants(participants)
        with self.book.lock:
            self.check_writer(job, epoch)
        # Step 2
        for ref in refs:
            if ref.bindings:
                self.fanout.connector.connect(ref).prepare_bindings(job, self.config.prepare_timeout)
        # Step 3
        with self.book.lock:
            current = self.check_writer(job, epoch)
            registered = dataclasses.replace(current, participants=refs)
            self.book.write(registered)
        _log.info("participants.registered", job=job, epoch=epoch, sinks=",".join(r.sink for r in refs))
        return registered

    def check_writer(self, job: str, epoch: int) -> JobState:
        """The job's state if ``epoch`` is its current writer epoch; raises otherwise."""
        validation.check_epoch(epoch)
        self.book.check_alive()
        state = self.book.job(job)
        if state is None:
            raise UnknownJob(job)
        if epoch < state.epoch:
            raise WriterFenced(job, epoch, state.epoch)
        if epoch > state.epoch:
            raise UnknownEpoch(job, epoch, state.epoch)
        return state

    # -- two-phase commit ------------------------------------------------------------------------

    def commit_transaction(self, job: str, epoch: int, batch: int, files: Sequence[StagedFile]) -> TransactionOutcome:
        """Run presumed-abort 2PC for ``<job>:<batch>`` and answer its outcome.

        Steps:
            1. Admission and idempotency (under the lock): the writer epoch must be current; a
               COMMITTED batch answers COMMITTED; an attempt that is not final is joined, not
               restarted; a batch older than the last committed one is presumed aborted. Otherwise
               a new PREPARING attempt is logged, with a snapshot of the job's participants.
            2. Send Prepare to every participant in parallel, bounded by ``prepare_timeout``.
            3. Decide (under the lock). All yes, and the writer not fenced meanwhile: log COMMITTING
               (the commit point). Anything else: log ABORTING, send Abort to every participant, log
               ABORTED, and answer ABORTED with a reason naming each participant and its cause.
            4. Deliver COMMIT in the background, retrying each participant with exponential backoff
               until it acks. The caller waits for the acks at most ``commit_wait``: it then gets
               COMMITTED, or COMMITTING if a participant is still missing. COMMITTING is final too
               (the decision is durable), so a writer may treat it as committed.
            5. Once every participant acked (on the delivery thread): log COMMITTED (END),
               tombstone transactions older than the retention, and delete the staged files.
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
            if isinstance(admitted, _Join):
                outcome = self._join(admitted, epoch)
                if outcome is not None:
                    return self._fenced_or(outcome, txn_id.job, epoch)
                continue
            # Steps 2 to 5
            return self._fenced_or(self._run_attempt(admitted), txn_id.job, epoch)

    def _fenced_or(self, outcome: TransactionOutcome, job: str, epoch: int) -> TransactionOutcome:
        """Step 6: ``outcome``, unless it is an abort and the writer has been fenced meanwhile."""
        if outcome.state is TransactionState.ABORTED:
            with self.book.lock:
                state = self.book.job(job)
            if state is not None and state.epoch > epoch:
                raise WriterFenced(job, epoch, state.epoch)
        return outcome

    def _admit(
        self, txn_id: TransactionId, epoch: int, files: tuple[StagedFile, ...]
    ) -> Transaction | _Join | TransactionOutcome:
        with self.book.lock:
            job = self.check_writer(txn_id.job, epoch)
            current = self.book.txn(txn_id)
            if current is not None and current.state is TransactionState.COMMITTED:
                self.collect_staging(txn_id)  # a replayed batch staged its files again
                return TransactionOutcome(TransactionState.COMMITTED)
            if current is not None and not current.state.is_final:
                return _Join(current, self.book.settled_event(txn_id))
            if txn_id.batch < job.last_committed_batch:
                return TransactionOutcome(
                    TransactionState.ABORTED,
                    f"batch {txn_id.batch} is older than the last committed batch {job.last_committed_batch} "
                    f"of job {txn_id.job!r} and was never committed: presumed aborted",
                )
            if txn_id.batch == job.last_committed_batch:
                return TransactionOutcome(TransactionState.COMMITTED)  # committed; its record was collected
            if not job.participants:
                raise NoParticipants(txn_id.job)
            now = time.time()
            attempt = Transaction(
                id=txn_id,
                state=TransactionState.PREPARING,
                writer_epoch=epoch,
                files=files,
                participants=job.participants,
                votes=tuple(ParticipantVote(ref.sink) for ref in job.participants),
                started_at=now,
                updated_at=now,
                attempt=current.attempt + 1 if current is not None else 1,
            )
            if self.config.log_preparing:
                self.book.write(attempt)
            else:
                self.book.remember(attempt)
        _log.info(
            "txn.preparing",
            txn=txn_id,
            job=txn_id.job,
            batch=txn_id.batch,
            epoch=epoch,
            attempt=attempt.attempt,
            files=len(files),
            rows=sum(f.count for f in files),
        )
        self._faults.at("prepare-logged", txn=txn_id)
        return attempt

    def _join(self, join: _Join, epoch: int) -> TransactionOutcome | None:
        """Wait for an attempt under way; None means "start a new attempt" (it was an older writer's, aborted)."""
        if join.txn.state is TransactionState.COMMITTING:
            wait = self.config.commit_wait
        else:
            wait = self.config.prepare_timeout + self.config.abort_timeout + self.config.commit_wait
        join.settled.wait(wait)
        self.book.check_alive()
        current = self.book.txn(join.txn.id)
        if current is None:
            return TransactionOutcome(TransactionState.ABORTED, "unknown transaction: presumed aborted")
        if current.state is TransactionState.ABORTED and current.writer_epoch < epoch:
            return None
        return TransactionOutcome(current.state, current.reason)

    def _run_attempt(self, txn: Transaction) -> TransactionOutcome:
        # Step 2
        started = time.monotonic()
        results = self.fanout.prepare_all(
            txn, self.config.prepare_timeout, on_result=lambda r: self.book.note_vote(txn, vote_of(r))
        )
        self.metrics.prepare_seconds.observe(time.monotonic() - started)
        votes = tuple(vote_of(result) for result in results)
        reasons = [no_vote_reason(result) for result in results if not voted_yes(result)]
        self._faults.at("votes-collected", txn=txn.id)
        # Step 3
        with self.book.lock:
            self.book.check_alive()
            current = self.book.txn(txn.id)
            if current is None or current.attempt != txn.attempt:
                return TransactionOutcome(TransactionState.ABORTED, "superseded by a newer attempt")
            voted = dataclasses.replace(current, votes=ordered(votes, current), updated_at=time.time())
            if current.state is TransactionState.PREPARING:
                job = self.book.job(txn.id.job) or JobState(txn.id.job)
                if job.epoch > txn.writer_epoch:
                    reasons.append(f"writer epoch {txn.writer_epoch} was fenced by epoch {job.epoch} before the commit")
                if not reasons:
                    decided = dataclasses.replace(voted, state=TransactionState.COMMITTING)
                    last = max(job.last_committed_batch, txn.id.batch)
                    self.book.write(decided, dataclasses.replace(job, last_committed_batch=last))
                else:
                    decided = dataclasses.replace(voted, state=TransactionState.ABORTING, reason="; ".join(reasons))
                    self.book.write(decided)
            else:  # decided meanwhile by AbortTransaction or an operator
                decided = voted
                self.book.note(voted)
        if decided.state is TransactionState.ABORTING:
            return self.abort_phase(decided)
        if decided.state is TransactionState.COMMITTING:
            _log.info("txn.committing", txn=txn.id, job=txn.id.job, batch=txn.id.batch, epoch=txn.writer_epoch)
            self._faults.at("commit-logged", txn=txn.id)
            # Step 4
            self.start_delivery(decided)
            self.book.settled_event(txn.id).wait(self.config.commit_wait)
        self.book.check_alive()
        final = self.book.txn(txn.id) or decided
        return TransactionOutcome(final.state, final.reason)

    def abort_phase(self, txn: Transaction) -> TransactionOutcome:
        """Finish an ABORTING transaction: send Abort to every participant (best effort), log ABORTED."""
        results = self.fanout.abort_all(txn, self.config.abort_timeout)
        acks = {result.sink: result for result in results}
        votes = tuple(
            dataclasses.replace(vote, acknowledged=acks[vote.sink].ok, error=acks[vote.sink].error or vote.error)
            if vote.sink in acks
            else vote
            for vote in (txn.vote_of(ref.sink) for ref in txn.participants)
        )
        final = dataclasses.replace(txn, state=TransactionState.ABORTED, votes=votes, updated_at=time.time())
        with self.book.lock:
            current = self.book.txn(txn.id)
            if current is None or (current.attempt, current.state) != (txn.attempt, TransactionState.ABORTING):
                return TransactionOutcome(current.state if current else TransactionState.ABORTED, txn.reason)
            self.book.write(final)
        self.metrics.transactions.labels("aborted").inc()
        self.metrics.transaction_seconds.observe(max(0.0, final.updated_at - final.started_at))
        _log.info("txn.aborted", txn=txn.id, job=txn.id.job, batch=txn.id.batch, reason=txn.reason)
        return TransactionOutcome(TransactionState.ABORTED, txn.reason)

    def start_delivery(self, txn: Transaction) -> None:
        """Start delivering a COMMITTING transaction (no-op if it is already being delivered)."""
        with self.book.lock:
            if txn.id in self._deliveries:
                return
            delivery = CommitDelivery(txn, self.book, self.fanout, self.config, self._delivered, metrics=self.metrics)
            self._deliveries[txn.id] = delivery
            self._decided_at[txn.id] = time.monotonic()
        delivery.start()

    def kick_delivery(self, txn_id: TransactionId) -> None:
        with self.book.lock:
            delivery = self._deliveries.get(txn_id)
        if delivery is not None:
            delivery.kick()

    def _delivered(self, txn: Transaction) -> None:
        # Step 5
        self._faults.at("commit-delivered", txn=txn.id)
        now = time.time()
        with self.book.lock:
            self._deliveries.pop(txn.id, None)
            decided_at = self._decided_at.pop(txn.id, None)
            current = self.book.txn(txn.id)
            if current is None or (current.attempt, current.state) != (txn.attempt, TransactionState.COMMITTING):
                return
            final = dataclasses.replace(txn, state=TransactionState.COMMITTED, updated_at=now)
            expired: list[Tombstone] = []
            if self.config.retain_batches > 0:
                below = txn.id.batch - self.config.retain_batches
                expired = [Tombstone(old) for old in self.book.expired(txn.id.job, below)]
            self.book.write(final, *expired)
        if decided_at is not None:
            self.metrics.commit_seconds.observe(time.monotonic() - decided_at)
        self.metrics.transactions.labels("committed").inc()
        self.metrics.transaction_seconds.observe(max(0.0, now - final.started_at))
        _log.info("txn.committed", txn=txn.id, job=txn.id.job, batch=txn.id.batch, tombstoned=len(expired))
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
                _log.warning("staging.gc_failed", txn=txn_id, job=txn_id.job, batch=txn_id.batch, error=exc)

        self.fanout.submit(collect)

    # -- aborts, queries, operators --------------------------------------------------------------

    def abort_transaction(self, job: str, epoch: int, batch: int, reason: str = "") -> TransactionOutcome:
        """The writer gives up on a batch: abort it unless it passed its commit point."""
        txn_id = TransactionId(validation.check_job(job), validation.check_batch(batch))
        validation.check_reason(reason)
        with self.book.lock:
            self.check_writer(job, epoch)
        return self._resolver.abort(txn_id, f"aborted by the writer (epoch {epoch}): {reason or 'no reason given'}")

    def resolve_transaction(self, job: str, batch: int, resolution: Resolution, reason: str = "") -> TransactionOutcome:
        """Operator action on a stuck transaction; see :class:`~onceflow.coordinator.engine.resolution.Resolver`."""
        txn_id = TransactionId(validation.check_job(job), validation.check_batch(batch))
        validation.check_reason(reason)
        return self._resolver.resolve(txn_id, resolution, reason)

    def get_transaction(self, job: str, batch: int) -> Transaction:
        """The transaction; an unknown one is reported ABORTED (presumed abort)."""
        txn_id = TransactionId(validation.check_job(job), validation.check_batch(batch))
        self.book.check_alive()
        txn = self.book.txn(txn_id)
        if txn is not None:
            return txn
        state = self.book.job(job)
        if state is not None and batch == state.last_committed_batch:
            return Transaction(txn_id, TransactionState.COMMITTED, 0, (), (), reason="committed (record collected)")
        return Transaction(txn_id, TransactionState.ABORTED, 0, (), (), reason="unknown transaction: presumed aborted")

    def list_transactions(
        self, job: str | None = None, states: Sequence[TransactionState] = (), limit: int = 0
    ) -> list[Transaction]:
        """Transactions by job, newest batch first; ``limit`` 0 means the default page size."""
        if job:
            validation.check_job(job)
        self.book.check_alive()
        size = min(limit or self.config.list_limit, self.config.max_list_limit)
        return self.book.transactions(job or None, states)[:size]
