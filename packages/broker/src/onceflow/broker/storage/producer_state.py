"""Per-partition idempotent-producer state (KIP-98): epochs, the last five batches, open transactions.

Sequence rules follow Kafka's broker (>= 2.5, with KIP-360):

- a batch whose epoch is older than the producer's known epoch -> InvalidProducerEpochError;
- a batch equal (same epoch, first and last sequence) to one of the last five cached batches ->
  DuplicateSequenceError carrying the offset it was originally written at; nothing is written;
- a newer epoch must restart at sequence 0 (unless the entry has no epoch yet) -> else OutOfOrder;
- the same epoch must continue at ``last_seq + 1``, wrapping from 2**31-1 to 0 -> else OutOfOrder;
- after a transaction marker bumped the epoch the first batch must have sequence 0;
- a non-transactional batch from a producer whose transaction is open here -> InvalidTxnStateError;
- a transactional batch opens the producer's transaction here at its base offset unless one is open
  (also under a newer epoch: the open transaction continues, as in Kafka); a COMMIT/ABORT marker
  closes it; a marker for a producer with no open transaction is accepted and changes nothing but the
  epoch (the coordinator re-sends markers when it recovers); a marker's epoch may be newer (fencing
  bumps it) but not older -> InvalidProducerEpochError;
- an UNKNOWN producer id is accepted with any sequence, as Kafka does since 2.5 for producers whose
  state expired or was cleaned; ``UnknownProducerIdError`` is therefore never raised.

State is rebuilt on open from the latest snapshot plus a replay of later batch headers, so it is as
durable as the log itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from onceflow.broker.storage import producer_snapshot
from onceflow.broker.storage.errors import (
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
)
from onceflow.broker.storage.header import NO_SEQUENCE, BatchHeader
from onceflow.broker.storage.producer_entry import NUM_BATCHES_TO_RETAIN, BatchMetadata, ProducerEntry
from onceflow.broker.storage.records import ControlType

__all__ = ["BatchMetadata", "CompletedTransaction", "OngoingTransactions", "ProducerEntry", "ProducerStateManager"]
INT32_MAX = 0x7FFFFFFF


@dataclass(frozen=True, slots=True)
class CompletedTransaction:
    """A transaction ended by a marker: its first data offset, the marker offset, and the outcome.

    Aborted ones go into the segment's transaction index, which read_committed Fetch consults.
    """

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


@dataclass
class OngoingTransactions:
    """Open transactions in this partition: producer id -> offset of its first transactional batch.

    The last stable offset is min(high watermark, first_unstable_offset()), not below the log start.
    """

    first_offsets: dict[int, int] = field(default_factory=dict)

    def begin(self, producer_id: int, first_offset: int) -> None:
        self.first_offsets.setdefault(producer_id, first_offset)

    def end(self, producer_id: int) -> None:
        self.first_offsets.pop(producer_id, None)

    def first_unstable_offset(self) -> int | None:
        """Offset of the earliest batch of a still-open transaction, or None."""
        return min(self.first_offsets.values(), default=None)


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStateManager:
    """Idempotence and transaction bookkeeping of one partition. Called from one thread only.

    Appends are two-phase so that a multi-batch produce is all-or-nothing: :meth:`stage` validates a
    batch against the committed state plus earlier staged batches, and :meth:`commit` applies the
    staged entries once the bytes are written.
    """

    def __init__(self, topic_partition: str, producer_id_expiration_ms: int = 86_400_000) -> None:
        self.topic_partition = topic_partition
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers: dict[int, ProducerEntry] = {}
        self.ongoing = OngoingTransactions()

    # --- produce path ------------------------------------------------------------------------------
    def stage(
        self, header: BatchHeader, assigned_base_offset: int, timestamp_ms: int, staged: dict[int, ProducerEntry]
    ) -> None:
        """Validate ``header`` (raises the sequence/epoch errors) and record it into ``staged``."""
        pid = header.producer_id
        entry = staged.get(pid) or self._producers.get(pid)
        if entry is not None:
            self._validate(entry, header)
            entry = replace(entry)
        else:
            entry = ProducerEntry(pid)
        self._record(entry, header, assigned_base_offset, timestamp_ms)
        staged[pid] = entry

    def commit(self, staged: dict[int, ProducerEntry]) -> None:
        """Make staged entries current (after their batches are in the log)."""
        for pid, entry in staged.items():
            self._producers[pid] = entry
            if entry.current_txn_first_offset is not None:
                self.ongoing.begin(pid, entry.current_txn_first_offset)

    def check_and_record(self, header: BatchHeader, assigned_base_offset: int, timestamp_ms: int) -> None:
        """Validate and record one batch at once (``timestamp_ms`` = its max timestamp as written)."""
        staged: dict[int, ProducerEntry] = {}
        self.stage(header, assigned_base_offset, timestamp_ms, staged)
        self.commit(staged)

    def replay_batch(self, header: BatchHeader) -> None:
        """Record a batch read back from the log during recovery (no validation: it was accepted)."""
        entry = self._producers.setdefault(header.producer_id, ProducerEntry(header.producer_id))
        self._record(entry, header, header.base_offset, header.max_timestamp)
        if entry.current_txn_first_offset is not None:
            self.ongoing.begin(header.producer_id, entry.current_txn_first_offset)

    def _validate(self, entry: ProducerEntry, header: BatchHeader) -> None:
        pid, epoch, first_seq = header.producer_id, header.producer_epoch, header.base_sequence
        where = f"{self.topic_partition} pid={pid}"
        if epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(f"{where}: epoch {epoch} is older than {entry.producer_epoch}")
        duplicate = entry.find_duplicate(header)
        if duplicate is not None:
            raise DuplicateSequenceError(pid, first_seq, duplicate.first_offset, duplicate.timestamp_ms)
        if epoch != entry.producer_epoch:
            if first_seq != 0 and entry.producer_epoch != -1:
                raise OutOfOrderSequenceError(f"{where}: new epoch {epoch} must start at sequence 0, got {first_seq}")
            self._check_txn_state(entry, header)
            return
        last_seq = entry.last_seq
        if last_seq == NO_SEQUENCE and first_seq != 0:
            raise OutOfOrderSequenceError(f"{where}: sequence must restart at 0 after an epoch bump, got {first_seq}")
        if last_seq != NO_SEQUENCE and not _in_sequence(last_seq, first_seq):
            raise OutOfOrderSequenceError(f"{where} epoch={epoch}: expected sequence {last_seq + 1}, got {first_seq}")
        self._check_txn_state(entry, header)

    def _check_txn_state(self, entry: ProducerEntry, header: BatchHeader) -> None:
        if not header.is_transactional and entry.current_txn_first_offset is not None:
            raise InvalidTxnStateError(
                f"{self.topic_partition} pid={header.producer_id}: non-transactional batch while its "
                f"transaction from offset {entry.current_txn_first_offset} is open"
            )

    @staticmethod
    def _record(entry: ProducerEntry, header: BatchHeader, base_offset: int, timestamp_ms: int) -> None:
        if header.producer_epoch != entry.producer_epoch:
            entry.producer_epoch = header.producer_epoch
            entry.batches = ()
        metadata = BatchMetadata(
            header.base_sequence,
            header.last_sequence,
            base_offset,
            base_offset + header.last_offset_delta,
            timestamp_ms,
        )
        entry.batches = (*entry.batches[-(NUM_BATCHES_TO_RETAIN - 1) :], metadata)
        entry.last_timestamp_ms = timestamp_ms
        if header.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = base_offset

    # --- transaction markers ------------------------------------------------------------------------
    def validate_control(self, producer_id: int, producer_epoch: int) -> None:
        """Reject a marker whose epoch is older than the producer's (a fenced coordinator request)."""
        entry = self._producers.get(producer_id)
        if entry is not None and producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"{self.topic_partition} pid={producer_id}: marker epoch {producer_epoch} "
                f"is older than {entry.producer_epoch}"
            )

    def record_control(
        self,
        producer_id: int,
        *,
        producer_epoch: int,
        marker: ControlType,
        offset: int,
        coordinator_epoch: int,
        timestamp_ms: int,
    ) -> CompletedTransaction | None:
        """Record a COMMIT/ABORT marker written at ``offset``; returns the transaction it completed."""
        entry = self._producers.setdefault(producer_id, ProducerEntry(producer_id))
        if producer_epoch != entry.producer_epoch:
            entry.producer_epoch = producer_epoch
            entry.batches = ()
        first = entry.current_txn_first_offset
        entry.current_txn_first_offset = None
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp_ms = timestamp_ms
        self.ongoing.end(producer_id)
        if first is None:
            return None
        return CompletedTransaction(producer_id, first, offset, marker == ControlType.ABORT)

    # --- queries and upkeep -------------------------------------------------------------------------
    def has_open_transaction(self, producer_id: int) -> bool:
        """Whether ``producer_id`` has written transactional data here that no marker has ended yet."""
        return producer_id in self.ongoing.first_offsets

    def entry(self, producer_id: int) -> ProducerEntry | None:
        entry = self._producers.get(producer_id)
        return None if entry is None else replace(entry)

    def active_producers(self) -> list[ProducerEntry]:
        """Copies of every known producer's entry, by producer id (for DescribeProducers)."""
        return [replace(self._producers[pid]) for pid in sorted(self._producers)]

    def remove_expired_producers(self, now_ms: int) -> int:
        """Forget producers idle for ``producer_id_expiration_ms`` without an open transaction."""
        horizon = now_ms - self.producer_id_expiration_ms
        expired = [
            pid
            for pid, e in self._producers.items()
            if e.current_txn_first_offset is None and e.last_timestamp_ms <= horizon
        ]
        for pid in expired:
            del self._producers[pid]
        return len(expired)

    # --- snapshots ----------------------------------------------------------------------------------
    def take_snapshot(self, directory: Path, offset: int) -> Path:
        """Atomically write the state as of ``offset`` (the next offset to replay); keep the last 2."""
        return producer_snapshot.write(directory, offset, self._producers.values())

    def load_snapshot(self, directory: Path, max_offset: int) -> int | None:
        """Replace the state with the newest readable snapshot at or below ``max_offset``.

        Snapshots beyond ``max_offset`` (the log was truncated) and unreadable ones are deleted.
        Returns the snapshot's offset (replay the log from there), or None: replay everything.
        """
        loaded = producer_snapshot.read_latest(directory, max_offset)
        self._producers = {}
        self.ongoing = OngoingTransactions()
        if loaded is None:
            return None
        offset, entries = loaded
        self._restore(entries)
        return offset

    def _restore(self, entries: Iterable[ProducerEntry]) -> None:
        for entry in entries:
            self._producers[entry.producer_id] = entry
            if entry.current_txn_first_offset is not None:
                self.ongoing.begin(entry.producer_id, entry.current_txn_first_offset)
