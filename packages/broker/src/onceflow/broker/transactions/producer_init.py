"""``ProducerInitializer``: InitProducerId for transactional producers (fencing, KIP-360, epoch overflow)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from onceflow.broker.transactions.completion import TransactionCompleter
from onceflow.broker.transactions.exceptions import TransactionCompletionInterrupted
from onceflow.broker.transactions.metadata import NO_PRODUCER_EPOCH, TransactionMetadata, is_epoch_exhausted
from onceflow.broker.transactions.results import InitProducerIdResult
from onceflow.broker.transactions.state import KafkaTransactionState
from onceflow.broker.transactions.store import TransactionStore
from onceflow.core.logging import get_logger

log = get_logger(__name__)


@dataclass(frozen=True)
class ProducerIdentity:
    """The ``(producer_id, epoch)`` a client presents (KIP-360) or is handed."""

    producer_id: int
    epoch: int


class ProducerInitializer:
    """Hands a transactional id to a producer instance, fencing every earlier instance.

    Guarantees:

    * The answer's ``(producer_id, epoch)`` is newer than any pair handed out before for the id, so
      every earlier instance is fenced (PRODUCER_FENCED on its next call), except a KIP-360 retry: the
      instance that presents the current (or, after a timeout abort or a lost answer, the previous)
      pair gets the bump it asked for, once.
    * The predecessor's open transaction is aborted (markers written, staged offsets discarded)
      before the answer; a prepared one is completed first.
    * The new state is in the log before the answer.
    """

    def __init__(
        self,
        store: TransactionStore,
        completer: TransactionCompleter,
        allocate_producer_id: Callable[[], int],
        now_ms: Callable[[], int],
        max_timeout_ms: int,
    ) -> None:
        self._store = store
        self._completer = completer
        self._allocate = allocate_producer_id
        self._now_ms = now_ms
        self._max_timeout_ms = max_timeout_ms

    def init(self, transactional_id: str, timeout_ms: int, expected: ProducerIdentity | None) -> InitProducerIdResult:
        """InitProducerId with a transactional id.

        Steps:

        1. Validate: a non-empty id (INVALID_REQUEST), ``0 < timeout_ms <= max`` (INVALID_TRANSACTION_TIMEOUT).
        2. Find the id's state, or create it with a newly allocated producer id (not logged yet).
        3. KIP-360: a presented pair must be the current one or the previous one (after a timeout
           abort, a lost answer, or a rotation); otherwise PRODUCER_FENCED, and nothing is aborted.
        4. A prepared transaction (a crash or a failed marker write left it) is completed first.
        5. An Ongoing transaction is aborted with a bumped epoch (fencing its owner): PrepareAbort is
           logged, ABORT markers are written, staged offsets are discarded, CompleteAbort is logged.
        6. Choose the new pair: a new producer id with epoch 0 if the epoch is exhausted, else the
           epoch bumped (or, for a retry of the last bump, the current pair); a presented epoch that is
           neither current nor previous is fenced.
        7. Log the Empty state with the new pair and answer it.

        If step 4 or 5 cannot write its markers the answer is CONCURRENT_TRANSACTIONS: the client
        retries, and completion is retried in the background.
        """
        # Step 1
        if not transactional_id:
            return InitProducerIdResult(ErrorCode.invalid_request)
        if not 0 < timeout_ms <= self._max_timeout_ms:
            return InitProducerIdResult(ErrorCode.invalid_transaction_timeout)
        # Step 2
        metadata = self._store.get(transactional_id)
        if metadata is None:
            metadata = TransactionMetadata.new(transactional_id, self._allocate(), timeout_ms, self._now_ms())
        # Step 3
        if expected is not None and not _may_present(metadata, expected):
            return self._fenced(metadata, expected)
        try:
            # Step 4
            if metadata.state.is_prepared:
                metadata = self._completer.complete(metadata)
            # Step 5
            if metadata.state is KafkaTransactionState.ONGOING:
                owner = expected == ProducerIdentity(metadata.producer_id, metadata.producer_epoch)
                metadata = self._completer.complete(self._completer.fence(metadata, recoverable=owner))
        except TransactionCompletionInterrupted as error:
            log.warning("txn.init_deferred", transactional_id=transactional_id, reason=str(error))
            return InitProducerIdResult(ErrorCode.concurrent_transactions)
        # Step 6
        chosen = self._next_pair(metadata, None if expected is None else expected.epoch)
        if chosen is None:
            return self._fenced(metadata, expected)
        pair, last_epoch = chosen
        # Step 7
        metadata = self._store.put(
            metadata.with_producer(pair.producer_id, pair.epoch, last_epoch, timeout_ms, self._now_ms())
        )
        log.info(
            "txn.init",
            transactional_id=transactional_id,
            pid=pair.producer_id,
            epoch=pair.epoch,
            timeout_ms=timeout_ms,
            result="ok",
        )
        return InitProducerIdResult(ErrorCode.none, pair.producer_id, pair.epoch)

    def _next_pair(
        self, metadata: TransactionMetadata, expected_epoch: int | None
    ) -> tuple[ProducerIdentity, int] | None:
        """The pair to hand out and the epoch to remember as the previous one; ``None`` means fenced."""
        current = metadata.producer_epoch
        if is_epoch_exhausted(current) and expected_epoch in {None, current, metadata.last_producer_epoch}:
            # Overflow: a new producer id. Remember the old epoch only for the instance that asked.
            last = current if expected_epoch is not None else NO_PRODUCER_EPOCH
            return ProducerIdentity(self._allocate(), 0), last
        if expected_epoch is None:
            return ProducerIdentity(metadata.producer_id, current + 1), NO_PRODUCER_EPOCH
        if current in {NO_PRODUCER_EPOCH, expected_epoch}:
            return ProducerIdentity(metadata.producer_id, current + 1), current
        if expected_epoch == metadata.last_producer_epoch:
            # A retry of the last bump whose answer was lost, or the owner of a timed-out transaction
            # (KIP-588): the current pair has never been handed to anyone else.
            return ProducerIdentity(metadata.producer_id, current), metadata.last_producer_epoch
        return None

    def _fenced(self, metadata: TransactionMetadata, expected: ProducerIdentity | None) -> InitProducerIdResult:
        log.info(
            "txn.init",
            transactional_id=metadata.transactional_id,
            pid=None if expected is None else expected.producer_id,
            epoch=None if expected is None else expected.epoch,
            current_pid=metadata.producer_id,
            current_epoch=metadata.producer_epoch,
            result="producer_fenced",
        )
        return InitProducerIdResult(ErrorCode.producer_fenced)


def _may_present(metadata: TransactionMetadata, expected: ProducerIdentity) -> bool:
    """KIP-360: whether a client presenting ``expected`` is the id's owner (or it has none yet).

    The producer id must be the current one, or the previous one with an exhausted epoch (a retried
    rotation); the epoch must be the current or the previous one. Checking the epoch here (Kafka checks
    it only after aborting an open transaction) keeps a zombie from aborting its successor's transaction.
    """
    if metadata.producer_epoch == NO_PRODUCER_EPOCH:
        return True
    known_id = expected.producer_id == metadata.producer_id or (
        expected.producer_id == metadata.prev_producer_id and is_epoch_exhausted(expected.epoch)
    )
    return known_id and expected.epoch in {metadata.producer_epoch, metadata.last_producer_epoch}
