"""``GroupStore``: the group coordinator's state (group metadata, offsets) in a ``StateLog``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from onceflow.broker.groups import records
from onceflow.broker.groups.offsets import SequencedOffset, TopicPartition
from onceflow.broker.groups.records import (
    GroupKey,
    OffsetKey,
    StoredGroup,
    StoredTxnOffset,
    TxnOffsetKey,
)
from onceflow.broker.groups.results import OffsetAndMetadata
from onceflow.broker.statelog import StateLog
from onceflow.core.logging import get_logger

logger = get_logger(__name__)

STATE_LOG_NAME = "_onceflow_groups.statelog"


@dataclass
class LoadedGroup:
    """What the log holds about one group after replay."""

    metadata: StoredGroup | None = None
    offsets: dict[TopicPartition, SequencedOffset] = field(default_factory=dict)
    pending: dict[int, dict[TopicPartition, SequencedOffset]] = field(default_factory=dict)


class GroupStore:
    """Durable group metadata and offsets. Every write method returns only once the write is durable.

    Each write is one ``StateLog.append_many``, so it is atomic across a crash. Every written offset gets
    a sequence number (its position in the log), handed back to the caller and reproduced by ``load``.
    """

    def __init__(self, log: StateLog) -> None:
        self._log = log
        self._sequence = 0

    @classmethod
    def open(cls, data_dir: Path, *, fsync: bool) -> GroupStore:
        """Open (creating if needed) the group state log in ``data_dir``."""
        return cls(StateLog.open(data_dir / STATE_LOG_NAME, fsync=fsync))

    def load(self) -> dict[str, LoadedGroup]:
        """Replay the log into the live state of every group that has any."""
        groups: dict[str, LoadedGroup] = {}
        for raw_key, raw_value in self._log.replay():
            key = records.decode_key(raw_key)
            self._sequence += 1
            loaded = groups.setdefault(key.group_id, LoadedGroup())
            match key:
                case GroupKey():
                    loaded.metadata = None if raw_value is None else records.decode_group(raw_key, raw_value)
                case OffsetKey(_, topic, partition):
                    if raw_value is None:
                        loaded.offsets.pop((topic, partition), None)
                    else:
                        offset = records.decode_offset(raw_key, raw_value)
                        loaded.offsets[(topic, partition)] = SequencedOffset(self._sequence, offset)
                case TxnOffsetKey(_, producer_id, topic, partition):
                    staged = loaded.pending.setdefault(producer_id, {})
                    if raw_value is None:
                        staged.pop((topic, partition), None)
                    else:
                        txn = records.decode_txn_offset(raw_key, raw_value)
                        staged[(topic, partition)] = SequencedOffset(self._sequence, txn.offset, txn.producer_epoch)
                    if not staged:
                        del loaded.pending[producer_id]
        return {
            group_id: loaded
            for group_id, loaded in groups.items()
            if loaded.metadata is not None or loaded.offsets or loaded.pending
        }

    def store_group(self, group_id: str, group: StoredGroup) -> None:
        """Persist the group's current generation."""
        self._log.append(records.encode_key(GroupKey(group_id)), records.encode_group(group))

    def store_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> dict[TopicPartition, SequencedOffset]:
        """Persist committed offsets; returns them with their sequence numbers."""
        batch: list[tuple[bytes, bytes | None]] = []
        written: dict[TopicPartition, SequencedOffset] = {}
        for (topic, partition), offset in offsets.items():
            batch.append((records.encode_key(OffsetKey(group_id, topic, partition)), records.encode_offset(offset)))
            written[(topic, partition)] = SequencedOffset(self._next_sequence(), offset)
        self._log.append_many(batch)
        return written

    def stage_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
    ) -> dict[TopicPartition, SequencedOffset]:
        """Persist offsets staged by a transaction; returns them with their sequence numbers."""
        batch: list[tuple[bytes, bytes | None]] = []
        written: dict[TopicPartition, SequencedOffset] = {}
        for (topic, partition), offset in offsets.items():
            key = TxnOffsetKey(group_id, producer_id, topic, partition)
            value = StoredTxnOffset(producer_epoch, offset)
            batch.append((records.encode_key(key), records.encode_txn_offset(value)))
            written[(topic, partition)] = SequencedOffset(self._next_sequence(), offset, producer_epoch)
        self._log.append_many(batch)
        return written

    def complete_txn(
        self,
        group_id: str,
        producer_id: int,
        staged: Iterable[TopicPartition],
        committed: Mapping[TopicPartition, OffsetAndMetadata],
    ) -> dict[TopicPartition, SequencedOffset]:
        """Atomically drop a transaction's staged offsets and persist the ones that become committed."""
        batch: list[tuple[bytes, bytes | None]] = []
        written: dict[TopicPartition, SequencedOffset] = {}
        for (topic, partition), offset in committed.items():
            batch.append((records.encode_key(OffsetKey(group_id, topic, partition)), records.encode_offset(offset)))
            written[(topic, partition)] = SequencedOffset(self._next_sequence(), offset)
        for topic, partition in staged:
            batch.append((records.encode_key(TxnOffsetKey(group_id, producer_id, topic, partition)), None))
            self._next_sequence()
        self._log.append_many(batch)
        return written

    def delete_group(
        self,
        group_id: str,
        offsets: Iterable[TopicPartition],
        staged: Iterable[tuple[int, TopicPartition]],
    ) -> None:
        """Atomically delete the group's metadata, committed offsets and staged offsets."""
        batch: list[tuple[bytes, bytes | None]] = [(records.encode_key(GroupKey(group_id)), None)]
        batch.extend((records.encode_key(OffsetKey(group_id, topic, partition)), None) for topic, partition in offsets)
        batch.extend(
            (records.encode_key(TxnOffsetKey(group_id, producer_id, topic, partition)), None)
            for producer_id, (topic, partition) in staged
        )
        self._sequence += len(batch)
        self._log.append_many(batch)

    def close(self) -> None:
        """Close the state log. Idempotent."""
        self._log.close()

    def _next_sequence(self) -> int:
        self._sequence += 1
        return self._sequence
