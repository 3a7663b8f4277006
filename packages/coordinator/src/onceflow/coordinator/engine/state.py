"""The transaction state manager: the only owner of the lock, the in-memory book and the log append.

The split is Kafka's TransactionStateManager beside its TransactionCoordinator: the engine, the
resolver, recovery and commit delivery talk to participants and wait; every change of a job or a
transaction is a transition of this class, decided and made durable in one critical section.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence

from onceflow.contract import ParticipantRef, ParticipantVote, TransactionId, TransactionOutcome, TransactionState
from onceflow.contract.staging import StagedFile
from onceflow.coordinator import validation
from onceflow.coordinator.engine.book import TransactionBook
from onceflow.coordinator.engine.transitions import (
    IN_DOUBT,
    AbortRequested,
    Admission,
    Answered,
    Begun,
    InFlight,
    check_transition,
)
from onceflow.coordinator.engine.votes import ordered
from onceflow.coordinator.exceptions import (
    CoordinatorFenced,
    CoordinatorNotActive,
    CoordinatorStopped,
    LogAppendRejected,
    NoParticipants,
    ResolutionRefused,
    TransactionDecided,
    TransactionLogError,
    UnknownEpoch,
    UnknownJob,
    WriterFenced,
)
from onceflow.coordinator.log.base import TransactionLog
from onceflow.coordinator.log.records import LogRecord, Tombstone
from onceflow.coordinator.model import JobState, Transaction
from onceflow.core.logging import get_logger

_log = get_logger(__name__)


class TransactionStateManager:
    """Jobs and transactions, changed only through durable transitions. Thread-safe.

    Every transition is one critical section under the manager's lock, which nobody else holds:

    Steps:
        1. Prepare the transition: check that the manager still serves, look up the current job or
           transaction, check that it may move to the target (the expected attempt in an expected
           state, the writer epoch current, the move allowed by
           :func:`~onceflow.coordinator.engine.transitions.check_transition`) and build the new
           snapshots. A transition that no longer applies changes nothing and says so.
        2. Append the snapshots to the log in one append. A log failure (fenced, or an unknown
           outcome) fails the manager for good: every later call raises :class:`CoordinatorStopped`,
           waiters wake up and :attr:`stopped` is set, so the process stops.
        3. Apply them to memory: a change is visible only once durable, and a transaction that
           became final wakes whoever waits for it to settle.

    Votes and acks are the exception: they change memory only (Commit is idempotent, and recovery
    re-asks every participant), see :meth:`note` and :meth:`note_vote`.

    COMMITTED (END) is the other exception, group-committed: :meth:`complete_commit` applies it to
    memory at once and queues it, and it is written in the same Kafka transaction as the next
    append, or alone by :meth:`flush_ended` once its linger passed with no other append (Kafka's
    transaction coordinator writes CompleteCommit after the markers, off the producer's path, in
    the same spirit). It is bookkeeping, not a decision: every participant has committed, and a
    restart that finds only the COMMITTING record delivers Commit again, which is idempotent, and
    logs END then.

    A manager serves only once :meth:`replay` opened the log and rebuilt memory from it (its
    activation): before that every call raises :class:`CoordinatorNotActive`, so nothing is ever
    answered (presumed aborted, say) from a memory that does not hold the log yet.
    """

    def __init__(self, log: TransactionLog) -> None:
        self._log = log
        #: Held while deciding and writing, so decisions and the log are in the same order.
        self._lock = threading.RLock()
        self._book = TransactionBook()
        self._stopped = threading.Event()
        self._failure: BaseException | None = CoordinatorNotActive("the coordinator has not taken over its log yet")
        #: END records (with their tombstones), already applied, waiting to ride with the next append.
        self._ended: list[LogRecord] = []

    # -- lifecycle and failure -------------------------------------------------------------------

    @property
    def stopped(self) -> threading.Event:
        """Set once the manager no longer serves (closed, fenced, or its log failed)."""
        return self._stopped

    @property
    def failure(self) -> BaseException | None:
        """Why it stopped serving (None while it serves)."""
        return self._failure

    @property
    def log_description(self) -> str:
        return self._log.description

    def replay(self) -> int:
        """Open the log, fencing every earlier coordinator instance, and rebuild memory from its
        records (the last record of a key wins), then serve; returns how many records it read."""
        records = self._log.open()
        with self._lock:
            for record in records:
                self._book.apply(record)
            if isinstance(self._failure, CoordinatorNotActive):
                self._failure = None
        return len(records)

    def not_active(self, reason: str) -> None:
        """Say why this instance does not serve (yet), e.g. which instance is active: the message of
        :class:`CoordinatorNotActive` until :meth:`replay`."""
        with self._lock:
            if isinstance(self._failure, CoordinatorNotActive):
                self._failure = CoordinatorNotActive(reason)

    def fence(self, reason: str) -> None:
        """Stop serving for good: another instance leads now (:class:`CoordinatorFenced`)."""
        self._fail(CoordinatorFenced(reason))

    def close(self) -> None:
        """Write the queued END records (best effort: the next instance delivers their Commit again),
        stop serving (a clean shutdown; later calls raise :class:`CoordinatorStopped`), close the log."""
        with self._lock:
            if self._failure is None:
                try:
                    self._write_ended()
                except (TransactionLogError, LogAppendRejected) as exc:
                    _log.warning("txn.end_unwritten", records=len(self._ended), error=exc)
            if self._failure is None:
                self._failure = CoordinatorStopped("the coordinator was closed")
            self._stopped.set()
            self._book.wake_all()
        self._log.close()

    def check_alive(self) -> None:
        """Raise :class:`CoordinatorStopped` once the manager no longer serves."""
        if isinstance(self._failure, CoordinatorStopped):
            raise self._failure
        if self._failure is not None:
            raise CoordinatorStopped(f"the coordinator stopped serving: {self._failure}") from None

    def _fail(self, exc: BaseException) -> None:
        with self._lock:
            if self._failure is None or isinstance(self._failure, CoordinatorNotActive):
                self._failure = exc
                _log.error("coordinator.failed", error=exc)
            self._stopped.set()
            self._book.wake_all()

    # -- Steps 1 to 3 ----------------------------------------------------------------------------

    def _append_and_apply(self, *records: LogRecord) -> None:
        """Steps 2 and 3 of a transition prepared under the lock; the queued END records go first,
        in the same append (a request refused as too large is retried without them)."""
        # Step 2
        self.check_alive()
        ended = list(self._ended)
        try:
            try:
                self._log.append([*ended, *records])
            except LogAppendRejected:
                if not ended:
                    raise
                self._log.append(ended)  # only the request's own records may be refused
                self._ended.clear()
                self._log.append(records)
        except TransactionLogError as exc:
            self._fail(exc)
            raise
        self._ended.clear()
        # Step 3
        for record in records:
            self._book.apply(record)

    def _write_ended(self) -> None:
        """Append the queued END records on their own (under the lock)."""
        if self._ended:
            self._append_and_apply()

    # -- look-ups --------------------------------------------------------------------------------

    def job(self, job: str) -> JobState | None:
        with self._lock:
            return self._book.job(job)

    def jobs(self) -> list[JobState]:
        with self._lock:
            return self._book.jobs()

    def txn(self, txn_id: TransactionId) -> Transaction | None:
        """The stored transaction (None if the log does not know it)."""
        with self._lock:
            return self._book.txn(txn_id)

    def lookup(self, txn_id: TransactionId) -> Transaction:
        """The transaction; an unknown one is COMMITTED if it is its job's last committed batch (its
        record was collected), otherwise ABORTED (presumed abort).

        An answer that tells a participant to abort (ABORTING, ABORTED, unknown) is given only after
        :meth:`TransactionLog.confirm_owner` proved that no newer coordinator had taken over the log
        meanwhile: a zombie instance's memory may lack a newer attempt's COMMIT. (A commit answer
        needs no proof: a decided commit is final.) A fenced instance stops, as on any log failure.
        """
        with self._lock:
            self.check_alive()
            txn = self._lookup(txn_id)
            if txn.state in (TransactionState.ABORTING, TransactionState.ABORTED):
                try:
                    self._log.confirm_owner()
                except TransactionLogError as exc:
                    self._fail(exc)
                    raise
            return txn

    def _lookup(self, txn_id: TransactionId) -> Transaction:
        txn = self._book.txn(txn_id)
        if txn is not None:
            return txn
        state = self._book.job(txn_id.job)
        if state is not None and txn_id.batch == state.last_committed_batch:
            return Transaction(txn_id, TransactionState.COMMITTED, 0, (), (), reason="committed (record collected)")
        return Transaction(txn_id, TransactionState.ABORTED, 0, (), (), reason="unknown transaction: presumed aborted")

    def settled_event(self, txn_id: TransactionId) -> threading.Event:
        """Set once ``txn_id`` is final (already set if it is final or unknown)."""
        with self._lock:
            return self._book.settled_event(txn_id)

    def transactions(self, job: str | None = None, states: Sequence[TransactionState] = ()) -> list[Transaction]:
        """Transactions of ``job`` (all jobs if None) in ``states`` (all if empty), by job then newest batch."""
        with self._lock:
            return self._book.transactions(job, states)

    def in_doubt(self) -> list[Transaction]:
        """Transactions not final yet (PREPARING, ABORTING, COMMITTING), by job then newest batch."""
        return self.transactions(states=IN_DOUBT)

    def in_doubt_count(self) -> int:
        with self._lock:
            return self._book.unsettled_count()

    # -- writers and their epochs ----------------------------------------------------------------

    def register_writer(self, job: str, writer_id: str) -> JobState:
        """Bump the job's writer epoch (fencing the previous writer); creates the job if new."""
        with self._lock:
            # Step 1
            self.check_alive()
            current = self._book.job(job) or JobState(job)
            registered = dataclasses.replace(current, epoch=current.epoch + 1, writer_id=writer_id)
            # Steps 2 and 3
            self._append_and_apply(registered)
        return registered

    def check_writer(self, job: str, epoch: int) -> JobState:
        """The job's state if ``epoch`` is its current writer epoch; raises otherwise."""
        validation.check_epoch(epoch)
        with self._lock:
            return self._writer(job, epoch)

    def _writer(self, job: str, epoch: int) -> JobState:
        self.check_alive()
        state = self._book.job(job)
        if state is None:
            raise UnknownJob(job)
        if epoch < state.epoch:
            raise WriterFenced(job, epoch, state.epoch)
        if epoch > state.epoch:
            raise UnknownEpoch(job, epoch, state.epoch)
        return state

    def set_participants(self, job: str, epoch: int, participants: tuple[ParticipantRef, ...]) -> JobState:
        """Replace the participants of ``job`` if ``epoch`` is still its writer (new attempts use them)."""
        validation.check_epoch(epoch)
        with self._lock:
            # Step 1
            registered = dataclasses.replace(self._writer(job, epoch), participants=participants)
            # Steps 2 and 3
            self._append_and_apply(registered)
        return registered

    # -- the two-phase commit ---------------------------------------------------------------------

    def begin(
        self, txn_id: TransactionId, epoch: int, files: tuple[StagedFile, ...], *, log_preparing: bool
    ) -> Admission:
        """Admit a commit of ``txn_id`` by writer ``epoch``: a new PREPARING attempt, or what to answer.

        A COMMITTED batch answers COMMITTED; an attempt that is not final is joined; a batch older
        than the last committed one is presumed aborted. A new attempt snapshots the job's
        participants; it is logged when ``log_preparing`` (otherwise it lives in memory only, and a
        restart presumes it aborted because nothing was logged).
        """
        validation.check_epoch(epoch)
        with self._lock:
            # Step 1
            job = self._writer(txn_id.job, epoch)
            current = self._book.txn(txn_id)
            if current is not None and current.state is TransactionState.COMMITTED:
                return Answered(TransactionOutcome(TransactionState.COMMITTED), recommitted=True)
            if current is not None and not current.state.is_final:
                return InFlight(current, self._book.settled_event(txn_id))
            if txn_id.batch < job.last_committed_batch:
                return Answered(
                    TransactionOutcome(
                        TransactionState.ABORTED,
                        f"batch {txn_id.batch} is older than the last committed batch {job.last_committed_batch} "
                        f"of job {txn_id.job!r} and was never committed: presumed aborted",
                    )
                )
            if txn_id.batch == job.last_committed_batch:
                return Answered(TransactionOutcome(TransactionState.COMMITTED))  # committed; its record was collected
            if not job.participants:
                raise NoParticipants(txn_id.job)
            now = time.time()
            attempt = check_transition(
                current,
                Transaction(
                    id=txn_id,
                    state=TransactionState.PREPARING,
                    writer_epoch=epoch,
                    files=files,
                    participants=job.participants,
                    votes=tuple(ParticipantVote(ref.name) for ref in job.participants),
                    started_at=now,
                    updated_at=now,
                    attempt=current.attempt + 1 if current is not None else 1,
                ),
            )
            if log_preparing:
                # Steps 2 and 3
                self._append_and_apply(attempt)
            else:
                # Step 3 only
                self._book.apply(attempt)
        return Begun(attempt)

    def decide(
        self, attempt: Transaction, votes: tuple[ParticipantVote, ...], reasons: Sequence[str]
    ) -> Transaction | TransactionOutcome:
        """The decision on ``attempt`` once its votes are in (``reasons``: why some voted no).

        COMMITTING (the commit point; the job's last committed batch moves with it) when nobody
        voted no and the writer was not fenced meanwhile, ABORTING with every reason otherwise. An
        attempt decided meanwhile (AbortTransaction, an operator) keeps its decision and gets the
        votes; a superseded attempt answers ABORTED.
        """
        with self._lock:
            # Step 1
            self.check_alive()
            current = self._book.txn(attempt.id)
            if current is None or current.attempt != attempt.attempt:
                return TransactionOutcome(TransactionState.ABORTED, "superseded by a newer attempt")
            voted = dataclasses.replace(current, votes=ordered(votes, current), updated_at=time.time())
            if current.state is not TransactionState.PREPARING:
                self._book.replace_votes(voted)  # decided meanwhile: the votes are news, not a transition
                return voted
            job = self._book.job(attempt.id.job) or JobState(attempt.id.job)
            why = list(reasons)
            if job.epoch > attempt.writer_epoch:
                why.append(f"writer epoch {attempt.writer_epoch} was fenced by epoch {job.epoch} before the commit")
            if not why:
                decided = check_transition(current, dataclasses.replace(voted, state=TransactionState.COMMITTING))
                last = max(job.last_committed_batch, attempt.id.batch)
                # Steps 2 and 3
                self._append_and_apply(decided, dataclasses.replace(job, last_committed_batch=last))
            else:
                decided = check_transition(
                    current, dataclasses.replace(voted, state=TransactionState.ABORTING, reason="; ".join(why))
                )
                # Steps 2 and 3
                self._append_and_apply(decided)
        return decided

    def complete_abort(self, aborted: Transaction) -> TransactionState | None:
        """Log ABORTED (``aborted`` carries the Abort acks) for its ABORTING attempt.

        None once logged; otherwise the state that kept it from being logged (the attempt was
        superseded or already finished; ABORTED when the transaction is gone).
        """
        with self._lock:
            # Step 1
            current = self._book.txn(aborted.id)
            if current is None or (current.attempt, current.state) != (aborted.attempt, TransactionState.ABORTING):
                return current.state if current is not None else TransactionState.ABORTED
            # Steps 2 and 3
            self._append_and_apply(check_transition(current, aborted))
        return None

    def complete_commit(self, committed: Transaction, retain_batches: int) -> int | None:
        """Apply COMMITTED (END) for its COMMITTING attempt, with tombstones of the final transactions
        of the job more than ``retain_batches`` behind (0 keeps all), and queue them for the log:
        they are written with the next append, or by :meth:`flush_ended`. Returns how many were
        tombstoned, or None when the attempt is no longer COMMITTING (nothing changed)."""
        with self._lock:
            # Step 1
            self.check_alive()
            current = self._book.txn(committed.id)
            if current is None or (current.attempt, current.state) != (committed.attempt, TransactionState.COMMITTING):
                return None
            expired: list[Tombstone] = []
            if retain_batches > 0:
                below = committed.id.batch - retain_batches
                expired = [Tombstone(old) for old in self._book.expired(committed.id.job, below)]
            records: list[LogRecord] = [check_transition(current, committed), *expired]
            self._ended.extend(records)
            for record in records:
                self._book.apply(record)
        return len(expired)

    def flush_ended(self, linger: float = 0.0) -> bool:
        """Write the queued END records unless another append took them within ``linger`` seconds
        (the group commit's window; 0 writes them now). False when the manager stopped instead: it
        writes nothing then, and the next instance finds the transactions COMMITTING and delivers
        Commit again."""
        if linger > 0 and self._stopped.wait(linger):
            return False
        with self._lock:
            if self._failure is not None:
                return False
            self._write_ended()
        return True

    def note(self, txn: Transaction) -> None:
        """Record the votes/acks of ``txn`` in memory only; ignored once the stored attempt moved on."""
        with self._lock:
            self._book.replace_votes(txn)

    def note_vote(self, txn: Transaction, vote: ParticipantVote) -> None:
        """Record one participant's vote of attempt ``txn`` in memory, as it arrives (for ListTransactions)."""
        with self._lock:
            self._book.add_vote(txn, vote)

    # -- forced outcomes and recovery ------------------------------------------------------------

    def request_abort(
        self, txn_id: TransactionId, reason: str, *, record_unknown: bool = False
    ) -> AbortRequested | TransactionOutcome:
        """Abort ``txn_id`` unless it passed its commit point (:class:`TransactionDecided`).

        PREPARING moves to ABORTING with ``reason``; ABORTING and ABORTED are left as they are.
        An unknown transaction is already aborted (presumed abort): the outcome is answered, and
        with ``record_unknown`` an ABORTED record keeps the reason in the log.
        """
        with self._lock:
            # Step 1
            self.check_alive()
            current = self._book.txn(txn_id)
            if current is None:
                presumed = self._lookup(txn_id)
                if presumed.state is TransactionState.COMMITTED:
                    raise TransactionDecided(str(txn_id), "COMMITTED", "abort")
                if record_unknown:
                    self._record_unknown_abort(txn_id, reason)
                return TransactionOutcome(TransactionState.ABORTED, presumed.reason if not record_unknown else reason)
            if current.state.is_commit:
                raise TransactionDecided(str(txn_id), current.state.value, "abort")
            logged = current.state is TransactionState.PREPARING
            if logged:
                aborting = dataclasses.replace(
                    current, state=TransactionState.ABORTING, reason=reason, updated_at=time.time()
                )
                # Steps 2 and 3
                self._append_and_apply(check_transition(current, aborting))
            return AbortRequested(self._book.settled_event(txn_id), logged)

    def _record_unknown_abort(self, txn_id: TransactionId, reason: str) -> None:
        job = self._book.job(txn_id.job)
        if job is None:
            return
        now = time.time()
        aborted = Transaction(
            id=txn_id,
            state=TransactionState.ABORTED,
            writer_epoch=job.epoch,
            files=(),
            participants=job.participants,
            started_at=now,
            updated_at=now,
            reason=reason,
        )
        self._append_and_apply(check_transition(None, aborted))

    def force_commit(self, txn_id: TransactionId, reason: str) -> Transaction | TransactionOutcome:
        """An operator's COMMIT: the COMMITTING transaction to deliver, or COMMITTED if it is done.

        A PREPARING transaction moves to COMMITTING (with ``reason``) only when every participant
        already voted yes (:class:`ResolutionRefused` otherwise); aborted and unknown (presumed
        aborted) transactions are refused (:class:`TransactionDecided`).
        """
        with self._lock:
            # Step 1
            self.check_alive()
            current = self._book.txn(txn_id)
            if current is None:
                if self._lookup(txn_id).state is TransactionState.COMMITTED:
                    return TransactionOutcome(TransactionState.COMMITTED)
                raise TransactionDecided(str(txn_id), "ABORTED (unknown: presumed aborted)", "commit")
            if current.state is TransactionState.COMMITTED:
                return TransactionOutcome(TransactionState.COMMITTED)
            if current.state is TransactionState.COMMITTING:
                return current
            if current.state is not TransactionState.PREPARING:
                raise TransactionDecided(str(txn_id), current.state.value, "commit")
            missing = [ref.name for ref in current.participants if not current.vote_of(ref.name).prepared]
            if missing:
                raise ResolutionRefused(
                    str(txn_id), f"is undecided and {', '.join(missing)} has not voted yes; only ABORT can end it"
                )
            committing = check_transition(
                current,
                dataclasses.replace(current, state=TransactionState.COMMITTING, reason=reason, updated_at=time.time()),
            )
            job = self._book.job(txn_id.job)
            assert job is not None
            last = max(job.last_committed_batch, txn_id.batch)
            # Steps 2 and 3
            self._append_and_apply(committing, dataclasses.replace(job, last_committed_batch=last))
        return committing

    def abort_undecided(self, reason: str) -> list[Transaction]:
        """Presumed abort of every PREPARING transaction (no decision was logged): ABORTING with
        ``reason``, all in one append. Returns them, by job then newest batch."""
        with self._lock:
            # Step 1
            now = time.time()
            presumed = [
                check_transition(
                    txn, dataclasses.replace(txn, state=TransactionState.ABORTING, reason=reason, updated_at=now)
                )
                for txn in self._book.transactions(states=(TransactionState.PREPARING,))
            ]
            if presumed:
                # Steps 2 and 3
                self._append_and_apply(*presumed)
        return presumed
