"""``TransactionCoordinator``: the transaction coordinator of the embedded broker (KIP-98, KIP-447)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kio.schema.errors import ErrorCode

from onceflow.broker.groups import GroupCoordinator, TxnOffsetCommitRequest
from onceflow.broker.tasks import cancel_and_wait
from onceflow.broker.transactions.completion import TransactionCompleter
from onceflow.broker.transactions.listing import describe, list_transactions
from onceflow.broker.transactions.markers import MarkerWriter
from onceflow.broker.transactions.metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition
from onceflow.broker.transactions.metadata import TransactionMetadata as Metadata
from onceflow.broker.transactions.producer_init import ProducerIdentity, ProducerInitializer
from onceflow.broker.transactions.results import InitProducerIdResult, TransactionDescription, TransactionListing
from onceflow.broker.transactions.state import KafkaTransactionState
from onceflow.broker.transactions.store import TransactionStore
from onceflow.broker.transactions.timeouts import SweepReport, TimeoutSweeper
from onceflow.core.logging import get_logger

log = get_logger(__name__)

SEVEN_DAYS_MS = 7 * 24 * 3600 * 1000


@dataclass
class _Running:
    """The parts that exist between ``start`` and ``stop``."""

    store: TransactionStore
    completer: TransactionCompleter
    init: ProducerInitializer
    sweeper: TimeoutSweeper
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    timer: asyncio.Task[None] | None = None


class TransactionCoordinator:
    """Transactional ids, their producers and their transactions, for a single-node broker.

    A pure asyncio domain object: the protocol layer turns requests into these calls and the results
    into responses (mapping PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for old request versions).

    Guarantees:

    * Every state change is in the transaction log (``data_dir/_onceflow_transactions.statelog``,
      fsynced if ``fsync``) before the call that makes it returns. One coordinator per data dir.
    * A transaction is all or nothing: once EndTxn has logged its outcome (the commit point), every
      partition of the transaction gets that outcome's marker and every group added to it gets its
      staged offsets committed (or discarded), even across crashes; the opposite outcome never shows.
    * Fencing: a new InitProducerId for an id aborts the open transaction and bumps the epoch; calls
      with an older epoch are answered PRODUCER_FENCED.
    * Ongoing transactions older than their timeout are aborted (and fenced) within
      ``abort_timed_out_transactions_interval_ms``; idle ids expire after
      ``transactional_id_expiration_ms``.
    * Requests are handled one at a time. Before ``start`` and after ``stop`` they are answered
      COORDINATOR_NOT_AVAILABLE. The group coordinator must be running while this one is.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        markers: MarkerWriter,
        groups: GroupCoordinator,
        allocate_producer_id: Callable[[], int],
        fsync: bool,
        transaction_max_timeout_ms: int = 900_000,
        abort_timed_out_transactions_interval_ms: int = 10_000,
        transactional_id_expiration_ms: int = SEVEN_DAYS_MS,
        clock: Callable[[], float] = time.time,
        coordinator_epoch: int = 0,
    ) -> None:
        self._data_dir = data_dir
        self._markers = markers
        self._groups = groups
        self._allocate = allocate_producer_id
        self._fsync = fsync
        self._max_timeout_ms = transaction_max_timeout_ms
        self._sweep_interval_ms = abort_timed_out_transactions_interval_ms
        self._expiration_ms = transactional_id_expiration_ms
        self._clock = clock
        self._coordinator_epoch = coordinator_epoch
        self._running: _Running | None = None

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    async def start(self) -> None:
        """Load every transactional id from the log, finish what a crash interrupted, start the timer.

        Steps:

        1. Open the transaction log (truncating a torn tail) and replay it: the last record of each id.
        2. Re-run markers and offset completion for every transaction left in PrepareCommit or
           PrepareAbort, and log its completion (one that fails again is retried by the timer).
        3. Start the timer that sweeps timeouts every ``abort_timed_out_transactions_interval_ms``.

        Ongoing transactions stay open (their producers may go on) until they end or time out.
        """
        if self._running is not None:
            return
        # Step 1
        store = TransactionStore.open(self._data_dir, fsync=self._fsync)
        completer = TransactionCompleter(store, self._markers, self._groups, self._now_ms, self._coordinator_epoch)
        running = _Running(
            store,
            completer,
            ProducerInitializer(store, completer, self._allocate, self._now_ms, self._max_timeout_ms),
            TimeoutSweeper(store, completer, self._now_ms, self._expiration_ms),
        )
        # Step 2
        try:
            report = running.sweeper.complete_prepared()
        except BaseException:
            store.close()
            raise
        # Step 3
        running.timer = asyncio.create_task(self._run_timer(running), name="transaction-coordinator-timer")
        self._running = running
        log.info(
            "txn.coordinator_started",
            data_dir=str(self._data_dir),
            transactional_ids=len(store),
            recovered=len(report.completed),
            deferred=len(report.deferred),
        )

    async def stop(self) -> None:
        """Stop the timer and close the log. Idempotent. Open transactions stay in the log."""
        running, self._running = self._running, None
        if running is None:
            return
        await cancel_and_wait(running.timer)
        async with running.lock:
            running.store.close()
        log.info("txn.coordinator_stopped", data_dir=str(self._data_dir))

    async def init_producer_id(
        self, transactional_id: str, transaction_timeout_ms: int, producer_id: int = -1, producer_epoch: int = -1
    ) -> InitProducerIdResult:
        """InitProducerId with a transactional id (see ``ProducerInitializer.init`` for the protocol).

        ``producer_id``/``producer_epoch`` (KIP-360, v3+) are the pair the client holds, or both -1.
        """
        running = self._running
        if running is None:
            return InitProducerIdResult(ErrorCode.coordinator_not_available)
        if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
            return InitProducerIdResult(ErrorCode.invalid_request)
        expected = None if producer_id == NO_PRODUCER_ID else ProducerIdentity(producer_id, producer_epoch)
        async with running.lock:
            return running.init.init(transactional_id, transaction_timeout_ms, expected)

    async def add_partitions_to_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn: the partitions join the producer's transaction, which becomes Ongoing.

        The same error applies to every partition. The caller checks that the partitions exist
        (UNKNOWN_TOPIC_OR_PARTITION / OPERATION_NOT_ATTEMPTED) before calling.
        """
        error = await self._add(transactional_id, producer_id, producer_epoch, partitions=partitions)
        return dict.fromkeys(partitions, error)

    async def add_offsets_to_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> ErrorCode:
        """AddOffsetsToTxn: the group's offsets (committed by TxnOffsetCommit) join the transaction."""
        if not group_id:
            return ErrorCode.invalid_request
        return await self._add(transactional_id, producer_id, producer_epoch, groups=(group_id,))

    async def txn_offset_commit(
        self, transactional_id: str, request: TxnOffsetCommitRequest
    ) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: stage the request's offsets in its group, pending until the transaction ends.

        The group must have been added with AddOffsetsToTxn in the current transaction
        (INVALID_TXN_STATE otherwise), so that EndTxn (or an abort) is sure to complete them.
        """
        offsets = request.offsets
        running = self._running
        if running is None:
            return dict.fromkeys(offsets, ErrorCode.coordinator_not_available)
        async with running.lock:
            owned = _owned(running.store, transactional_id, request.producer_id, request.producer_epoch)
            if isinstance(owned, ErrorCode):
                return dict.fromkeys(offsets, owned)
            if owned.state.is_prepared:
                return dict.fromkeys(offsets, ErrorCode.concurrent_transactions)
            if owned.state is not KafkaTransactionState.ONGOING or request.group_id not in owned.groups:
                return dict.fromkeys(offsets, ErrorCode.invalid_txn_state)
            return self._groups.stage_txn_offsets(request)

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> ErrorCode:
        """EndTxn: commit or abort the producer's transaction.

        Checks first: the id, producer id (INVALID_PRODUCER_ID_MAPPING) and epoch (PRODUCER_FENCED),
        then the state: Ongoing goes on below; a completed transaction with the same outcome is a
        retry (NONE) and with the other one INVALID_TXN_STATE; a prepared one with the same outcome is
        completed now (CONCURRENT_TRANSACTIONS if that fails again); Empty has nothing to end (NONE).

        Steps:

        1. Log PrepareCommit/PrepareAbort durably. This is the commit point: from here the outcome
           is fixed and the answer is NONE.
        2. Write COMMIT/ABORT markers to every partition of the transaction.
        3. Commit (or discard) the staged offsets of every group added with AddOffsetsToTxn.
        4. Log CompleteCommit/CompleteAbort with the partitions cleared.

        If step 2 or 3 fails the transaction stays prepared and is completed by the timer or on
        restart; the producer's next AddPartitionsToTxn gets CONCURRENT_TRANSACTIONS until then.
        """
        running = self._running
        if running is None:
            return ErrorCode.coordinator_not_available
        async with running.lock:
            owned = _owned(running.store, transactional_id, producer_id, producer_epoch)
            error = owned if isinstance(owned, ErrorCode) else self._end(running, owned, commit)
            log.info(
                "txn.end",
                transactional_id=transactional_id,
                pid=producer_id,
                epoch=producer_epoch,
                commit=commit,
                result=error.name,
            )
            return error

    async def abort_transaction(self, transactional_id: str) -> ErrorCode:
        """Operator action: abort the id's open transaction and fence its producer (epoch bump).

        TRANSACTIONAL_ID_NOT_FOUND for an unknown id; INVALID_TXN_STATE if no transaction is open or
        its commit is already decided (a PrepareCommit is completed as a commit, never aborted).
        """
        running = self._running
        if running is None:
            return ErrorCode.coordinator_not_available
        async with running.lock:
            metadata = running.store.get(transactional_id)
            if metadata is None:
                return ErrorCode.transactional_id_not_found
            state = metadata.state
            if state is KafkaTransactionState.ONGOING:
                metadata = running.completer.fence(metadata, recoverable=False)
                running.completer.try_complete(metadata)  # decided: a failure is retried by the timer
                error = ErrorCode.none
            elif state is KafkaTransactionState.PREPARE_ABORT:
                completed = running.completer.try_complete(metadata)
                error = ErrorCode.none if completed else ErrorCode.concurrent_transactions
            else:
                if state is KafkaTransactionState.PREPARE_COMMIT:
                    running.completer.try_complete(metadata)
                error = ErrorCode.invalid_txn_state
            log.info(
                "txn.operator_abort",
                transactional_id=transactional_id,
                pid=metadata.producer_id,
                epoch=metadata.producer_epoch,
                result=error.name,
            )
            return error

    def list_transactions(
        self, state_filters: Sequence[str] = (), producer_id_filters: Sequence[int] = (), duration_filter_ms: int = -1
    ) -> list[TransactionListing]:
        """ListTransactions (see ``listing.list_transactions``); empty while not running."""
        if self._running is None:
            return []
        store = self._running.store
        return list_transactions(store, self._now_ms(), state_filters, producer_id_filters, duration_filter_ms)

    def describe_transactions(self, transactional_ids: Sequence[str]) -> list[TransactionDescription]:
        """DescribeTransactions, one entry per id, in order (TRANSACTIONAL_ID_NOT_FOUND if unknown)."""
        running = self._running
        if running is None:
            return [TransactionDescription(ErrorCode.coordinator_not_available, tid) for tid in transactional_ids]
        return [describe(running.store, transactional_id) for transactional_id in transactional_ids]

    def is_partition_in_open_txn(self, producer_id: int, topic: str, partition: int) -> bool:
        """Whether ``producer_id``'s Ongoing transaction has the partition (for produce verification)."""
        running = self._running
        if running is None:
            return False
        metadata = running.store.for_producer(producer_id)
        return (
            metadata is not None
            and metadata.state is KafkaTransactionState.ONGOING
            and (topic, partition) in metadata.partitions
        )

    async def sweep(self) -> SweepReport:
        """Run the timer's work now: complete prepared, abort timed-out, expire idle transactions."""
        running = self._running
        if running is None:
            return SweepReport()
        async with running.lock:
            return running.sweeper.sweep()

    async def _add(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        *,
        partitions: Sequence[TopicPartition] = (),
        groups: Sequence[str] = (),
    ) -> ErrorCode:
        running = self._running
        if running is None:
            return ErrorCode.coordinator_not_available
        async with running.lock:
            metadata = _owned(running.store, transactional_id, producer_id, producer_epoch)
            if isinstance(metadata, ErrorCode):
                return metadata
            if metadata.state.is_prepared:
                return ErrorCode.concurrent_transactions
            if not partitions and not groups:
                return ErrorCode.none
            already = metadata.partitions.issuperset(partitions) and metadata.groups.issuperset(groups)
            if metadata.state is KafkaTransactionState.ONGOING and already:
                return ErrorCode.none
            running.store.put(metadata.with_added(self._now_ms(), partitions, groups))
            log.debug(
                "txn.add",
                transactional_id=transactional_id,
                pid=producer_id,
                epoch=producer_epoch,
                partitions=",".join(f"{topic}-{partition}" for topic, partition in sorted(partitions)) or None,
                groups=",".join(groups) or None,
                started=metadata.state is not KafkaTransactionState.ONGOING,
            )
            return ErrorCode.none

    def _end(self, running: _Running, metadata: Metadata, commit: bool) -> ErrorCode:
        state = metadata.state
        if state is KafkaTransactionState.EMPTY:
            # Nothing was begun (as Apache Kafka answers; clients end an empty transaction without EndTxn).
            return ErrorCode.invalid_txn_state
        if state is KafkaTransactionState.ONGOING:
            # Step 1
            prepared = running.completer.decide(metadata, commit)
            # Steps 2-4
            running.completer.try_complete(prepared)
            return ErrorCode.none
        same = (state in {KafkaTransactionState.PREPARE_COMMIT, KafkaTransactionState.COMPLETE_COMMIT}) == commit
        if not same:
            return ErrorCode.invalid_txn_state
        if state.is_prepared and not running.completer.try_complete(metadata):
            return ErrorCode.concurrent_transactions
        return ErrorCode.none

    async def _run_timer(self, running: _Running) -> None:
        while True:
            await asyncio.sleep(self._sweep_interval_ms / 1000)
            try:
                async with running.lock:
                    running.sweeper.sweep()
            except Exception:
                # The timer must keep running for the other transactions; the failure is reported here.
                log.exception("txn.sweep_failed", data_dir=str(self._data_dir))


def _owned(
    store: TransactionStore, transactional_id: str, producer_id: int, producer_epoch: int
) -> Metadata | ErrorCode:
    """The id's state if the request comes from its current producer, else the error to answer."""
    if not transactional_id:
        return ErrorCode.invalid_request
    metadata = store.get(transactional_id)
    if metadata is None or metadata.producer_id != producer_id:
        return ErrorCode.invalid_producer_id_mapping
    if metadata.producer_epoch != producer_epoch:
        return ErrorCode.producer_fenced
    return metadata
