"""The log of one topic-partition: an ordered list of segments, the last one active.

Batches are validated by header and CRC only and stored as the client sent them, with the base offset
rewritten (it lies outside the CRC). Reads return whole stored batches as bytes.

Transactions (KIP-98): the last stable offset (LSO) is the first offset of the earliest open
transaction, or the high watermark. Every ABORT marker that ends a transaction adds an entry to its
segment's ``.txnindex``, from which :meth:`PartitionLog.aborted_transactions` answers read_committed
fetches. The LSO is always a batch boundary, so a fetch bounded by it returns whole batches below it.
"""

from __future__ import annotations

import shutil
import struct
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from onceflow.broker.storage import compaction, log_start, retention, timestamp_lookup
from onceflow.broker.storage.append_validation import stamp_log_append_time, validate_client_records
from onceflow.broker.storage.compaction import CompactionStats
from onceflow.broker.storage.config import LogConfig
from onceflow.broker.storage.errors import (
    DuplicateSequenceError,
    LogWriteError,
    OffsetOutOfRangeError,
)
from onceflow.broker.storage.header import next_offset_after
from onceflow.broker.storage.producer_state import ProducerEntry, ProducerStateManager
from onceflow.broker.storage.records import ControlType, build_control_batch
from onceflow.broker.storage.recovery import rebuild_stale_transaction_indexes, recover_segments, replay_producer_state
from onceflow.broker.storage.segment import AppendedBatch, LogSegment
from onceflow.broker.storage.transaction_index import AbortedTransaction, collect_aborted
from onceflow.core.logging import get_logger

log = get_logger(__name__)

_BASE_OFFSET = struct.Struct(">q")
_INT32_MAX = 0x7FFFFFFF


@dataclass(frozen=True)
class AppendInfo:
    """Result of an append: offsets assigned, LogAppendTime (-1 for CreateTime), log start offset."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int
    log_start_offset: int


class PartitionLog:
    """Durable, append-only log of one partition. Not thread-safe: call from the broker thread only.

    Guarantees: offsets are assigned contiguously from the log end offset; an append that returns is
    in the kernel page cache (and on disk with ``fsync="always"``) and survives ``kill -9``; an append
    that raises wrote nothing; reads return whole batches exactly as stored.
    """

    def __init__(
        self,
        *,
        directory: Path,
        topic: str,
        partition: int,
        config: LogConfig,
        segments: list[LogSegment],
        producer_state: ProducerStateManager,
    ) -> None:
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self.producer_state = producer_state
        #: Where DeleteRecords moved the log start (see :mod:`log_start`); the first base without one.
        self._log_start = segments[0].base_offset

    # --- opening ------------------------------------------------------------------------------------
    @classmethod
    def open(cls, directory: Path, topic: str, partition: int, config: LogConfig, *, now_ms: int) -> PartitionLog:
        """Open (creating if needed) the partition log stored in ``directory`` itself.

        Recovery:

        1. Repair the segments (discard unfinished compaction output, finish swapped compaction
           output, rebuild missing or corrupt indexes, truncate a torn tail at the last valid batch);
           see :func:`recovery.recover_segments`.
        2. Load the newest producer-state snapshot not beyond the log end offset.
        3. Rebuild, below the snapshot offset, every ``.txnindex`` that was missing or corrupt, by a
           header scan from the log start.
        4. Replay the headers of every idempotent batch and marker after the snapshot offset,
           re-indexing the transactions aborted there. Open transactions (and so the LSO) come back
           from the snapshot and the replay; they stay open until the coordinator's marker.
        5. Expire producers idle for longer than ``producer_id_expiration_ms``.
        """
        topic_partition = f"{topic}-{partition}"
        # Step 1
        segments = recover_segments(directory, config.index_interval_bytes, topic_partition)
        state = ProducerStateManager(topic_partition, config.producer_id_expiration_ms)
        partition_log = cls(
            directory=directory,
            topic=topic,
            partition=partition,
            config=config,
            segments=segments,
            producer_state=state,
        )
        partition_log._log_start = log_start.load(directory, segments[0].base_offset, partition_log.log_end_offset)
        # Step 2
        snapshot_offset = state.load_snapshot(directory, partition_log.log_end_offset)
        replay_from = max(snapshot_offset or 0, partition_log.log_start_offset)
        # Step 3
        rebuild_stale_transaction_indexes(segments, replay_from, topic_partition)
        # Step 4
        replay_producer_state(segments, state, replay_from)
        # Step 5
        state.remove_expired_producers(now_ms)
        log.info(
            "storage.partition_log_opened",
            partition=topic_partition,
            log_start=partition_log.log_start_offset,
            log_end=partition_log.log_end_offset,
            segments=len(segments),
            snapshot=snapshot_offset,
        )
        return partition_log

    # --- offsets ------------------------------------------------------------------------------------
    @property
    def topic_partition(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def log_start_offset(self) -> int:
        return max(self._log_start, self._segments[0].base_offset)

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        """Equal to the log end offset: a single node has no followers to wait for."""
        return self._segments[-1].next_offset

    @property
    def last_stable_offset(self) -> int:
        """High watermark, lowered to the first offset of the earliest open transaction (but not below
        the log start offset, which retention may move past an open transaction, as in Kafka).

        Records of every producer at or after it, transactional or not, stay invisible to
        read_committed consumers until the transaction ends.
        """
        first_unstable = self.producer_state.ongoing.first_unstable_offset()
        hw = self.high_watermark
        return hw if first_unstable is None else max(self.log_start_offset, min(hw, first_unstable))

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return tuple(self._segments)

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def update_config(self, config: LogConfig) -> None:
        """Apply changed topic configs (AlterConfigs); they take effect from the next operation."""
        self.config = config
        self.producer_state.producer_id_expiration_ms = config.producer_id_expiration_ms

    # --- appending ----------------------------------------------------------------------------------
    def append(self, records: bytes, *, now_ms: int) -> AppendInfo:
        """Append the records field of one Produce partition (one or more v2 batches), all or nothing.

        1. Validate every batch: magic 2, CRC, size <= max.message.bytes, not a control batch,
           lastOffsetDelta consistent with recordCount.
        2. Assign offsets from the log end offset and stage the idempotence checks of batches with a
           producer id (DuplicateSequenceError carries the original offset; nothing is written).
        3. Roll to a new segment if this append would overflow the active one or it is too old.
        4. Rewrite each batch's base offset in place of the client's; with LogAppendTime also set the
           timestamp type and max timestamp and recompute the CRC.
        5. Write with one ``os.writev``; fsync when ``fsync="always"``.
        6. Commit the staged producer state and return the assigned offsets.
        """
        config = self.config
        view = memoryview(records)
        # Step 1
        batches = validate_client_records(view, config, self.topic, self.partition)
        # Step 2
        append_time = now_ms if config.log_append_time else -1
        staged: dict[int, ProducerEntry] = {}
        placed: list[AppendedBatch] = []
        next_offset = self.log_end_offset
        for position, header in batches:
            max_timestamp = now_ms if config.log_append_time else header.max_timestamp
            if header.producer_id >= 0:
                try:
                    self.producer_state.stage(header, next_offset, max_timestamp, staged)
                except DuplicateSequenceError as dup:
                    if not config.log_append_time:
                        dup.log_append_time_ms = -1
                    raise
            placed.append(
                AppendedBatch(
                    position, header.size, next_offset, next_offset + header.last_offset_delta + 1, max_timestamp
                )
            )
            next_offset += header.last_offset_delta + 1
        # Step 3
        self._maybe_roll(len(view), placed[-1].max_timestamp, next_offset)
        # Step 4
        buffers: list[bytes | bytearray | memoryview] = []
        for batch in placed:
            end = batch.relative_position + batch.size
            if config.log_append_time:
                rewritten = bytearray(view[batch.relative_position : end])
                _BASE_OFFSET.pack_into(rewritten, 0, batch.base_offset)
                stamp_log_append_time(rewritten, now_ms)
                buffers.append(rewritten)
            else:
                buffers.append(_BASE_OFFSET.pack(batch.base_offset))
                buffers.append(view[batch.relative_position + 8 : end])
        # Step 5
        self._segments[-1].append(buffers, placed, sync=config.fsync == "always")
        # Step 6
        self.producer_state.commit(staged)
        return AppendInfo(placed[0].base_offset, next_offset - 1, append_time, self.log_start_offset)

    def append_control(
        self, marker: ControlType, *, producer_id: int, producer_epoch: int, coordinator_epoch: int, now_ms: int
    ) -> int:
        """Write a COMMIT/ABORT marker for ``producer_id`` and return its offset.

        1. Reject a marker older than the producer's epoch (InvalidProducerEpochError); a newer one
           is accepted and becomes the producer's epoch (fencing bumps it).
        2. Roll if needed, write the control batch (fdatasync with ``fsync="always"``).
        3. End the producer's open transaction here, if any (a re-sent marker ends nothing).
        4. If it was aborted, add an entry to the active segment's ``.txnindex`` before returning
           (fsynced with ``fsync="always"``; recovery re-derives it from the marker in any case).
        """
        # Step 1
        self.producer_state.validate_control(producer_id, producer_epoch)
        # Step 2
        batch = build_control_batch(
            marker,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            timestamp_ms=now_ms,
        )
        offset = self.log_end_offset
        self._maybe_roll(len(batch), now_ms, offset + 1)
        active = self._segments[-1]
        active.append(
            [_BASE_OFFSET.pack(offset), memoryview(batch)[8:]],
            [AppendedBatch(0, len(batch), offset, offset + 1, now_ms)],
            sync=self.config.fsync == "always",
        )
        # Step 3
        completed = self.producer_state.record_control(
            producer_id,
            producer_epoch=producer_epoch,
            marker=marker,
            offset=offset,
            coordinator_epoch=coordinator_epoch,
            timestamp_ms=now_ms,
        )
        # Step 4
        if completed is not None and completed.aborted:
            active.txn_index.append_completed(completed, self.producer_state.ongoing.first_unstable_offset())
            if self.config.fsync == "always":
                try:
                    active.txn_index.flush()
                except OSError as exc:  # the marker is written; recovery re-derives the entry from it
                    log.warning("storage.txn_index_flush_failed", partition=self.topic_partition, reason=repr(str(exc)))
            log.info(
                "storage.txn_aborted",
                partition=self.topic_partition,
                pid=producer_id,
                epoch=producer_epoch,
                first_offset=completed.first_offset,
                marker_offset=offset,
            )
        return offset

    # --- segments -----------------------------------------------------------------------------------
    def _maybe_roll(self, incoming_bytes: int, max_timestamp: int, next_offset: int) -> None:
        active = self._segments[-1]
        if active.size == 0:
            return
        too_big = active.size + incoming_bytes > self.config.segment_bytes
        too_old = (
            active.first_batch_timestamp is not None
            and max_timestamp - active.first_batch_timestamp >= self.config.segment_ms
        )
        if too_big or too_old or next_offset - active.base_offset > _INT32_MAX:
            self.roll_segment()

    def roll_segment(self) -> LogSegment:
        """Seal the active segment (fsync) and start a new one at the log end offset; snapshot the
        producer state there. Returns the new active segment (the current one if it is empty)."""
        active = self._segments[-1]
        if active.size == 0:
            return active
        try:
            active.seal()
            new = LogSegment.create(self.directory, active.next_offset, self.config.index_interval_bytes)
        except OSError as exc:
            # Nothing changed: create() removed what it began, and the old segment stays active
            # (its index files reopen on the next append).
            log.warning("storage.segment_roll_failed", partition=self.topic_partition, reason=repr(str(exc)))
            raise LogWriteError(self.topic_partition, f"segment roll failed: {exc}") from exc
        self._segments.append(new)
        self._bases.append(new.base_offset)
        self.snapshot_producer_state(new.base_offset)
        log.info("storage.segment_rolled", partition=self.topic_partition, base_offset=new.base_offset)
        return new

    def snapshot_producer_state(self, offset: int) -> None:
        """Snapshot the producer state at ``offset``; a failure is logged and costs only a longer
        replay on the next open (an older snapshot, or none, is used)."""
        try:
            self.producer_state.take_snapshot(self.directory, offset)
        except OSError as exc:
            log.warning(
                "storage.producer_snapshot_failed", partition=self.topic_partition, offset=offset, reason=repr(str(exc))
            )

    # --- reading ------------------------------------------------------------------------------------
    def read(self, fetch_offset: int, max_bytes: int, *, max_offset: int | None = None) -> bytes:
        """Whole batches from the one containing ``fetch_offset``, as stored.

        At least one batch even if larger than ``max_bytes`` (KIP-74); never a batch whose base offset
        is >= ``max_offset``; b"" at the log end. Raises OffsetOutOfRangeError outside
        ``[log_start_offset, log_end_offset]``.
        """
        if fetch_offset < self.log_start_offset or fetch_offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"{self.topic_partition}: offset {fetch_offset} outside "
                f"[{self.log_start_offset}, {self.log_end_offset}]"
            )
        for segment in self._segments[bisect_right(self._bases, fetch_offset) - 1 :]:
            found = segment.find_batch(fetch_offset)
            if found is None:
                continue
            position, header = found
            if max_offset is not None and header.base_offset >= max_offset:
                return b""
            return segment.read_batches(position, max_bytes, max_offset)
        return b""

    def read_committed(self, fetch_offset: int, max_bytes: int) -> tuple[bytes, list[AbortedTransaction]]:
        """A read_committed fetch: :meth:`read` up to the last stable offset, plus the aborted
        transactions overlapping the batches returned (a Fetch response's ``aborted_transactions``).
        Raises OffsetOutOfRangeError like :meth:`read`."""
        data = self.read(fetch_offset, max_bytes, max_offset=self.last_stable_offset)
        if not data:
            return data, []
        return data, self.aborted_transactions(fetch_offset, next_offset_after(data))

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTransaction]:
        """``(producer_id, first_offset)`` of every aborted transaction whose range (first data offset
        to ABORT marker) overlaps ``[fetch_offset, upper_bound_offset)``, in marker order.

        Served from memory; entries live as long as their marker's segment (see compaction).
        """
        start = max(0, bisect_right(self._bases, fetch_offset) - 1)
        return collect_aborted(self._segments[start:], fetch_offset, upper_bound_offset)

    def has_open_transaction(self, producer_id: int) -> bool:
        """Whether ``producer_id`` has an open transaction in this partition."""
        return self.producer_state.has_open_transaction(producer_id)

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record whose timestamp is >= ``timestamp_ms``, found
        through the time index; None if every batch is older."""
        return timestamp_lookup.offset_for_timestamp(self._segments, timestamp_ms)

    # --- upkeep -------------------------------------------------------------------------------------
    def flush(self) -> None:
        """fsync the active segment and its indexes (closed segments were fsynced when sealed)."""
        self._segments[-1].flush()

    def apply_retention(self, now_ms: int) -> int:
        """Delete whole old segments past ``retention.ms`` or beyond ``retention.bytes`` (never the
        active one) when the cleanup policy includes delete; returns how many were deleted."""
        doomed = retention.expired_segment_count(self._segments, self.config, now_ms)
        for segment in self._segments[:doomed]:
            segment.delete_files()
            log.info(
                "storage.segment_deleted",
                partition=self.topic_partition,
                base_offset=segment.base_offset,
                reason="retention",
            )
        del self._segments[:doomed]
        self._bases = [s.base_offset for s in self._segments]
        return doomed

    def delete_records(self, offset: int) -> int:
        """DeleteRecords: move the log start offset to ``offset`` (-1: the high watermark), durably
        before it returns, and delete the whole segments below it; returns the new log start offset.

        Raises OffsetOutOfRangeError past the high watermark, LogWriteError when the offset cannot be
        stored (nothing changed then).
        """
        target = self.high_watermark if offset == -1 else offset
        if not 0 <= target <= self.high_watermark:
            raise OffsetOutOfRangeError(f"{self.topic_partition}: offset {offset} is beyond the high watermark")
        if target <= self.log_start_offset:
            return self.log_start_offset
        try:
            log_start.store(self.directory, target)
        except OSError as exc:
            raise LogWriteError(self.topic_partition, f"log start offset: {exc.strerror or exc}") from exc
        self._log_start = target
        doomed = log_start.whole_segments_below(self._segments, target)
        for segment in self._segments[:doomed]:
            segment.delete_files()
        del self._segments[:doomed]
        self._bases = [s.base_offset for s in self._segments]
        log.info("storage.records_deleted", partition=self.topic_partition, log_start=target, segments_deleted=doomed)
        return self.log_start_offset

    def expire_producers(self, now_ms: int) -> int:
        """Forget producers idle past ``producer.id.expiration.ms``; returns how many."""
        return self.producer_state.remove_expired_producers(now_ms)

    def compact(self, now_ms: int) -> CompactionStats:
        """Compact the closed segments when the cleanup policy includes compact (see compaction)."""
        if not self.config.compact:
            return CompactionStats()
        first_unstable = self.producer_state.ongoing.first_unstable_offset()
        limit = self._segments[-1].base_offset if first_unstable is None else first_unstable
        self._segments, stats = compaction.compact_segments(
            self.directory, self._segments, self.config, first_uncleanable_offset=limit, now_ms=now_ms
        )
        self._bases = [s.base_offset for s in self._segments]
        return stats

    def close(self) -> None:
        """fsync, snapshot the producer state at the log end and close every file."""
        try:
            self._segments[-1].flush()
        finally:
            self.snapshot_producer_state(self.log_end_offset)
            for segment in self._segments:
                segment.close()

    def close_files(self) -> None:
        """Close every file without writing anything (a log being abandoned, e.g. a failed create)."""
        for segment in self._segments:
            segment.close()

    def delete(self) -> None:
        """Close the log and remove its directory with everything in it."""
        self.close_files()
        shutil.rmtree(self.directory, ignore_errors=True)
