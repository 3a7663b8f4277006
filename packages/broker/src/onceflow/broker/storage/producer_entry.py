"""What a partition remembers about one producer id: its epoch and its last five batches."""

from __future__ import annotations

from dataclasses import dataclass

from onceflow.broker.storage.header import NO_SEQUENCE, BatchHeader

NUM_BATCHES_TO_RETAIN = 5


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """Sequence and offset range of one batch a producer wrote; ``timestamp_ms`` is its max timestamp."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp_ms: int


@dataclass(slots=True)
class ProducerEntry:
    """What the partition knows about one producer id."""

    producer_id: int
    producer_epoch: int = -1
    batches: tuple[BatchMetadata, ...] = ()
    coordinator_epoch: int = -1
    current_txn_first_offset: int | None = None
    last_timestamp_ms: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        """The cached batch that ``header`` repeats, if any."""
        if header.producer_epoch != self.producer_epoch:
            return None
        last_seq = header.last_sequence
        for batch in self.batches:
            if batch.first_seq == header.base_sequence and batch.last_seq == last_seq:
                return batch
        return None
