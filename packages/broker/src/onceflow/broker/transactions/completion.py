"""``TransactionCompleter``: ends transactions (the commit point, then markers and group offsets)."""

from __future__ import annotations

from collections.abc import Callable

from onceflow.broker.groups import GroupCoordinator
from onceflow.broker.transactions.exceptions import MarkerWriteError, TransactionCompletionInterrupted
from onceflow.broker.transactions.markers import MarkerWriter, TransactionMarker
from onceflow.broker.transactions.metadata import TransactionMetadata
from onceflow.broker.transactions.state import KafkaTransactionState
from onceflow.broker.transactions.store import TransactionStore
from onceflow.core.logging import get_logger

log = get_logger(__name__)


class TransactionCompleter:
    """Decides and completes transactions: the broker-side end of KIP-98's two-phase commit.

    Guarantees:

    * ``decide`` makes the outcome durable (PrepareCommit/PrepareAbort in the log) before anything
      else happens; that record is the commit point.
    * ``complete`` can be called any number of times on a prepared transaction (markers and group
      offset completion are idempotent) until it reaches CompleteCommit/CompleteAbort; it never writes
      the opposite outcome anywhere.
    """

    def __init__(
        self,
        store: TransactionStore,
        markers: MarkerWriter,
        groups: GroupCoordinator,
        now_ms: Callable[[], int],
        coordinator_epoch: int,
    ) -> None:
        self._store = store
        self._markers = markers
        self._groups = groups
        self._now_ms = now_ms
        self._coordinator_epoch = coordinator_epoch

    def decide(self, metadata: TransactionMetadata, commit: bool) -> TransactionMetadata:
        """Step 1 of ending an Ongoing transaction: log PrepareCommit/PrepareAbort (the commit point)."""
        return self._store.put(metadata.prepared(commit, self._now_ms()))

    def fence(self, metadata: TransactionMetadata, *, recoverable: bool) -> TransactionMetadata:
        """Step 1 of aborting an Ongoing transaction behind its owner's back (timeout, new instance,
        operator): log PrepareAbort with the epoch bumped, which fences the owner's later calls.
        """
        return self._store.put(metadata.fenced(self._now_ms(), recoverable=recoverable))

    def complete(self, metadata: TransactionMetadata) -> TransactionMetadata:
        """Finish a prepared transaction; returns its CompleteCommit/CompleteAbort state.

        Steps (numbered as in ``TransactionCoordinator.end_txn``; step 1 was ``decide``/``fence``):

        2. Write a COMMIT/ABORT marker, at the transaction's epoch, to every partition of the
           transaction. A partition that no longer exists is skipped.
        3. Commit (or discard) the offsets staged in every group added to the transaction.
        4. Log CompleteCommit/CompleteAbort, with the partitions and groups cleared.

        Raises ``TransactionCompletionInterrupted`` if step 2 or 3 fails; the transaction then stays
        prepared (in the log and in memory) and this may be called again. Log failures in step 4
        propagate as they are.
        """
        if not metadata.state.is_prepared:
            raise ValueError(f"transaction {metadata.transactional_id!r} is {metadata.state.value}, not prepared")
        commit = metadata.state is KafkaTransactionState.PREPARE_COMMIT
        # Step 2
        for topic, partition in sorted(metadata.partitions):
            self._write_marker(metadata, topic, partition, commit)
        # Step 3
        for group_id in sorted(metadata.groups):
            try:
                self._groups.complete_txn_offsets(group_id, metadata.producer_id, commit)
            except Exception as error:
                # Caught here because the coordinator can act on it: the outcome is durable and is retried.
                raise TransactionCompletionInterrupted(
                    metadata.transactional_id, metadata.producer_id, f"completing offsets of group {group_id}", error
                ) from error
        # Step 4
        done = self._store.put(metadata.completed(self._now_ms()))
        log.info(
            "txn.completed",
            **metadata.log_fields(),
            result="commit" if commit else "abort",
            partitions=len(metadata.partitions),
            groups=len(metadata.groups),
        )
        return done

    def try_complete(self, metadata: TransactionMetadata) -> bool:
        """``complete``, logging an interruption instead of raising it; whether it completed."""
        try:
            self.complete(metadata)
        except TransactionCompletionInterrupted as error:
            log.warning(
                "txn.completion_deferred",
                **metadata.log_fields(),
                reason=str(error),
            )
            return False
        return True

    def _write_marker(self, metadata: TransactionMetadata, topic: str, partition: int, commit: bool) -> None:
        try:
            self._markers.write_marker(
                TransactionMarker(
                    topic=topic,
                    partition=partition,
                    producer_id=metadata.producer_id,
                    producer_epoch=metadata.producer_epoch,
                    coordinator_epoch=self._coordinator_epoch,
                    commit=commit,
                )
            )
        except MarkerWriteError as error:
            log.warning(
                "txn.marker_skipped",
                **metadata.log_fields(),
                topic=topic,
                partition=partition,
                reason=error.reason,
            )
        except Exception as error:
            # Caught here because the coordinator can act on it: the outcome is durable and is retried.
            raise TransactionCompletionInterrupted(
                metadata.transactional_id, metadata.producer_id, f"writing the marker to {topic}-{partition}", error
            ) from error
