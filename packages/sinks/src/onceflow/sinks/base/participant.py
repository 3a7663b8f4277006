"""The two-phase-commit sink participant contract (Flink's TwoPhaseCommitSinkFunction lifecycle)."""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence

from onceflow.contract import (
    DEFAULT_OUTPUT,
    CommittedBatches,
    InvalidBinding,
    PrepareVote,
    Resolution,
    SinkBinding,
    TransactionId,
)
from onceflow.contract.shards import WHOLE_SINK, Shard, check_shardable, is_keyed, rows_of_shard
from onceflow.contract.staging import StagedFile, StagingError
from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.core.logging import get_logger
from onceflow.sinks.base.rows import BoundRows, load_outputs
from onceflow.sinks.exceptions import BindingMissing, BindingRejected, PrepareRejected, ShardMismatch

_log = get_logger(__name__)


class SinkParticipant(abc.ABC):
    """One sink taking part in the coordinator's presumed-abort two-phase commit.

    The contract every implementation keeps:

    - :meth:`prepare` (Flink's ``preCommit``) makes the batch durable in a form the sink can
      commit later, surviving a crash of this process, and then votes. A yes vote is a promise:
      the batch can still be committed after any crash.
    - A :meth:`commit` after a yes vote must eventually succeed. Commit is idempotent: committing
      an already committed transaction is a no-op.
    - :meth:`abort` is idempotent: aborting an unknown or already aborted transaction succeeds.
    - :meth:`list_prepared` lists the transactions prepared but neither committed nor aborted.
    - :meth:`recover` resolves every prepared transaction with the coordinator's decision; it runs
      before the participant takes new work.
    - What a transaction writes is given by the job's :class:`SinkBinding` list: each binding takes
      the staged files of one output to one table or topic, in upsert mode (a later row replaces
      the stored row with the same key) or append mode (every row added once: the transaction id,
      not a key, recognises a replayed batch). Every binding of a transaction commits together.
      A participant has no bindings of its own: a transaction (or a sharded sink's registration)
      without any is refused with :class:`BindingMissing`, naming the job and its unbound outputs.
    - :meth:`prepare_bindings` runs when a job starts: it creates missing tables, adds nullable
      columns, and refuses a table that does not fit (:class:`BindingRejected`).
    - A participant may serve one ``shard`` of a sink that several processes serve
      (:mod:`onceflow.contract.shards`): it gets its share of each batch's files, keeps only
      the rows of the keys it owns for keyed (upsert) bindings (:meth:`load`), and writes its commit
      records under :attr:`record_name` (``<sink>#<index>``), so replay detection is exact per
      shard. A request for another shard of the sink is refused (:meth:`check_serves`).
    - :meth:`committed_batches` lists what the sink's own commit records say it committed, per job:
      the evidence a lost decision log is rebuilt from (``onceflow txn rebuild``).

    Subclasses implement :meth:`prepare_rows`, :meth:`commit`, :meth:`abort`, :meth:`list_prepared`,
    :meth:`prepare_bindings` and :meth:`close`. Every method is safe to
    call from several threads.
    """

    def __init__(self, name: str, *, shard: Shard = WHOLE_SINK) -> None:
        if not name or ":" in name or "#" in name:
            raise ValueError(f"sink name {name!r} must be non-empty and free of ':' and '#'")
        self.name = name
        self.shard = shard
        #: Crash points for tests (``commit-midway``); the server sets them, production has none.
        self.faults: FaultInjector = NO_FAULTS

    @property
    def record_name(self) -> str:
        """The name this participant's commit records, prepared transactions and transactional ids
        carry: the sink's name, or ``<sink>#<index>`` for a shard of a sharded sink."""
        return self.shard.record_name(self.name)

    def check_serves(self, shard: Shard) -> None:
        """Raise :class:`ShardMismatch` unless this participant serves ``shard`` of its sink."""
        if shard != self.shard:
            raise ShardMismatch(self.name, self.shard, shard)

    def check_shardable(self, job: str, bindings: Sequence[SinkBinding]) -> None:
        """Raise :class:`BindingRejected` when this participant is a shard and ``bindings`` cannot be split
        over shards (an output bound by key and by file at once), or :class:`BindingMissing` when ``job``
        gave none (a shard cannot tell which rows are its own)."""
        if not self.shard.is_sharded:
            return
        try:
            check_shardable(self.name, self.bindings_for(job, (), bindings))
        except InvalidBinding as exc:
            raise BindingRejected(self.name, "bindings", str(exc)) from None

    def own_topics(self) -> frozenset[str]:
        """Topics this sink keeps for itself besides the internal ``_onceflow_*`` ones (a Kafka sink's
        configured commits topic): no binding may write them (:mod:`onceflow.contract.reserved`)."""
        return frozenset()

    def bindings_for(self, job: str, files: Sequence[StagedFile], bindings: Sequence[SinkBinding]) -> list[SinkBinding]:
        """``bindings``, which ``job``'s ``[[outputs.<name>]]`` declare for this sink; none raises
        :class:`BindingMissing` naming the job and the outputs of ``files`` (a participant has no
        bindings of its own to fall back to)."""
        if not bindings:
            raise BindingMissing(self.name, job, sorted({f.output for f in files}) or [DEFAULT_OUTPUT])
        return list(bindings)

    def load(self, job: str, files: Sequence[StagedFile], bindings: Sequence[SinkBinding]) -> list[BoundRows]:
        """The rows each of ``job``'s bindings writes, read and verified from ``files`` (raises
        ``StagingError``, or :class:`BindingMissing` without bindings); for a shard, a keyed binding
        keeps only the rows of the keys this shard owns."""
        outputs = load_outputs(files, self.bindings_for(job, files, bindings))
        if not self.shard.is_sharded:
            return outputs
        return [
            BoundRows(bound.binding, rows_of_shard(bound.rows, bound.binding.keys, self.shard))
            if is_keyed(bound.binding)
            else bound
            for bound in outputs
        ]

    def prepare(
        self, txn: TransactionId, files: Sequence[StagedFile], bindings: Sequence[SinkBinding] = ()
    ) -> PrepareVote:
        """Make ``txn`` durable and vote.

        Steps:
            1. Read and verify every staged file, and group the rows by binding (a shard keeps the
               keys it owns). A missing, truncated or checksum-mismatched file, or bindings a shard
               cannot split, or no bindings at all, is a no vote whose reason names the file or binding.
            2. Make the rows durable in the sink's prepared form (:meth:`prepare_rows`). A sink
               that refuses (:class:`PrepareRejected`) votes no with its reason.
            3. Vote yes with the number of rows.
        """
        # Step 1
        try:
            self.check_shardable(txn.job, bindings)
            outputs = self.load(txn.job, files, bindings)
        except (StagingError, BindingRejected) as exc:
            _log.warning("prepare.vote_no", sink=self.name, shard=self.shard.index, txn=txn, reason=str(exc))
            return PrepareVote.no(str(exc))
        # Step 2
        try:
            self.prepare_rows(txn, outputs, files)
        except PrepareRejected as exc:
            _log.warning("prepare.vote_no", sink=self.name, shard=self.shard.index, txn=txn, reason=str(exc))
            return PrepareVote.no(str(exc))
        # Step 3
        rows = sum(bound.rows.num_rows for bound in outputs)
        _log.info(
            "prepare.vote_yes",
            sink=self.name,
            shard=self.shard.index,
            **txn.log_fields(),
            files=len(files),
            rows=rows,
        )
        return PrepareVote.yes(rows)

    @abc.abstractmethod
    def prepare_rows(self, txn: TransactionId, outputs: Sequence[BoundRows], files: Sequence[StagedFile]) -> None:
        """Make every binding's rows durable as the prepared state of ``txn`` (raise
        :class:`PrepareRejected` to vote no). The bindings are one transaction: all or nothing.

        Preparing a transaction that is already prepared or committed must succeed without
        writing the rows twice.
        """

    @abc.abstractmethod
    def commit(
        self, txn: TransactionId, files: Sequence[StagedFile] = (), bindings: Sequence[SinkBinding] = ()
    ) -> None:
        """Commit a prepared ``txn``. Idempotent. ``files`` and ``bindings`` are given again, for
        sinks whose fast-path prepared state may be gone and that redo the batch from staging."""

    @abc.abstractmethod
    def prepare_bindings(self, job: str, bindings: Sequence[SinkBinding]) -> None:
        """Get ready for ``job``'s bindings before its first batch (raise :class:`BindingRejected`).

        Tables: create a missing one from the binding's schema, add a nullable column the output
        gained, refuse one whose columns or keys do not fit, naming the table, the column and the
        mismatch. Topics: create a missing one and publish the Avro writer schema.
        """

    @abc.abstractmethod
    def abort(self, txn: TransactionId) -> None:
        """Abort ``txn`` and drop its prepared state. Idempotent; an unknown transaction is a no-op."""

    @abc.abstractmethod
    def list_prepared(self) -> list[TransactionId]:
        """The transactions prepared but not yet committed or aborted, oldest first."""

    def committed_batches(self, job: str | None, limit: int) -> list[CommittedBatches]:
        """Per job (only ``job`` when given), the newest batches committed here (at most ``limit``),
        from the sink's commit records. A sink kind without such records raises NotImplementedError."""
        raise NotImplementedError(f"sink {self.name!r} ({type(self).__name__}) cannot list its committed batches")

    def recover(self, outcome_of: Callable[[TransactionId], Resolution]) -> dict[TransactionId, Resolution]:
        """Resolve every prepared transaction with the coordinator's decision (Flink's ``recoverAndCommit``).

        Steps:
            1. List the prepared transactions.
            2. Ask ``outcome_of`` for each one's decision (it blocks until the coordinator has one).
            3. Commit the ones the coordinator committed; abort the rest (presumed abort).

        Returns what was done to each transaction.
        """
        # Step 1
        prepared = self.list_prepared()
        _log.info("recover.start", sink=self.name, prepared=len(prepared))
        done: dict[TransactionId, Resolution] = {}
        for txn in prepared:
            # Step 2
            outcome = outcome_of(txn)
            # Step 3
            if outcome is Resolution.COMMIT:
                self.commit(txn)
            else:
                self.abort(txn)
            _log.info("recover.resolved", sink=self.name, **txn.log_fields(), outcome=outcome.value)
            done[txn] = outcome
        return done

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections and clients. Prepared state stays durable."""
