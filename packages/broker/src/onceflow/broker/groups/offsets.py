"""``GroupOffsets``: a group's committed offsets and its pending transactional offsets (KIP-447)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from onceflow.broker.groups.results import OffsetAndMetadata

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class SequencedOffset:
    """An offset with the position (``sequence``) at which it was written to the state log.

    Sequences order writes across the whole log; they decide whether a committed transactional offset
    replaces a plain commit that happened after the transactional one was staged (it does not).
    """

    sequence: int
    value: OffsetAndMetadata
    producer_epoch: int = -1


class GroupOffsets:
    """Committed offsets, plus offsets staged by open transactions, keyed by producer id.

    Staged offsets are invisible as committed offsets until their transaction commits. On commit a
    staged offset replaces the committed one only if it was written after it, as Kafka does.
    """

    def __init__(self) -> None:
        self._committed: dict[TopicPartition, SequencedOffset] = {}
        self._pending: dict[int, dict[TopicPartition, SequencedOffset]] = {}

    @property
    def is_empty(self) -> bool:
        """No committed and no pending offsets."""
        return not self._committed and not self._pending

    def committed(self, partition: TopicPartition) -> OffsetAndMetadata | None:
        """The committed offset of ``partition``, if any."""
        entry = self._committed.get(partition)
        return None if entry is None else entry.value

    def all_committed(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """Every committed offset."""
        return {partition: entry.value for partition, entry in self._committed.items()}

    def commit(self, partition: TopicPartition, entry: SequencedOffset) -> None:
        """Record ``entry`` as the committed offset of ``partition``."""
        self._committed[partition] = entry

    def stage(self, producer_id: int, partition: TopicPartition, entry: SequencedOffset) -> None:
        """Record ``entry`` as pending for ``producer_id``'s open transaction."""
        self._pending.setdefault(producer_id, {})[partition] = entry

    def pending(self, producer_id: int) -> dict[TopicPartition, SequencedOffset]:
        """The offsets staged by ``producer_id`` (a copy)."""
        return dict(self._pending.get(producer_id, {}))

    def all_pending(self) -> dict[int, dict[TopicPartition, SequencedOffset]]:
        """Every staged offset, by producer id (a copy)."""
        return {producer_id: dict(staged) for producer_id, staged in self._pending.items()}

    def has_pending(self, partition: TopicPartition) -> bool:
        """Whether any open transaction has staged an offset for ``partition``."""
        return any(partition in staged for staged in self._pending.values())

    def winners_on_commit(self, producer_id: int) -> dict[TopicPartition, SequencedOffset]:
        """The staged offsets of ``producer_id`` that would become committed if its transaction commits."""
        winners: dict[TopicPartition, SequencedOffset] = {}
        for partition, staged in self._pending.get(producer_id, {}).items():
            current = self._committed.get(partition)
            if current is None or current.sequence < staged.sequence:
                winners[partition] = staged
        return winners

    def finish_transaction(self, producer_id: int, committed: Mapping[TopicPartition, SequencedOffset]) -> None:
        """Drop ``producer_id``'s staged offsets, making ``committed`` the committed ones."""
        self._pending.pop(producer_id, None)
        self._committed.update(committed)

    def remove(self, partitions: Iterable[TopicPartition]) -> None:
        """Forget the committed offsets of ``partitions``."""
        for partition in partitions:
            self._committed.pop(partition, None)

    def clear(self) -> None:
        """Forget every committed and staged offset."""
        self._committed.clear()
        self._pending.clear()
