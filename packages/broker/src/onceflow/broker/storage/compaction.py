"""Log compaction (``cleanup.policy=compact``): keep the latest record per key in closed segments.

Guarantees: offsets are preserved (compaction only leaves gaps); the latest record of every key in
the cleaned range survives, unless it is a tombstone older than ``delete.retention.ms``; records of
aborted transactions are dropped; control batches and records without a key are kept; a producer's
last batch is kept (empty if need be) so its sequence state survives a restart; and a crash at any
moment loses nothing (see the swap protocol in :func:`compact_segments`). The active segment and
anything at or after the first open transaction are never touched.

Transactions: aborted data is dropped but its ABORT marker is kept, and so is the marker's entry in
the ``.txnindex`` (the cleaned segment's index is the concatenation of the replaced ones). Kafka also
keeps an entry until its marker goes; since markers are never removed here, entries only leave with
their segment (retention). An entry whose data was cleaned away is harmless: a read_committed consumer
only filters the batches it receives, and there are none left for it.

Tombstone age is taken from the tombstone's own timestamp (Kafka measures it from the first cleaning
that saw it; with LogAppendTime the two coincide closely).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from onceflow.broker.storage.config import LogConfig
from onceflow.broker.storage.errors import UnsupportedCompressionError
from onceflow.broker.storage.header import BatchHeader
from onceflow.broker.storage.records import ControlType, SimpleRecord, control_marker, decode_records, encode_batch
from onceflow.broker.storage.recovery import CLEANED_SUFFIX, SWAP_SUFFIX, complete_swap
from onceflow.broker.storage.segment import LogSegment, segment_path
from onceflow.core.fsync import fsync_path
from onceflow.core.logging import get_logger

log = get_logger(__name__)


@dataclass(frozen=True)
class CompactionStats:
    """What one compaction pass did."""

    segments_cleaned: int = 0
    records_removed: int = 0
    tombstones_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0


@dataclass
class _TransactionView:
    """Which data batches belong to aborted transactions, and each producer's last batch."""

    aborted: set[int] = field(default_factory=set)
    last_batch_of_producer: dict[int, int] = field(default_factory=dict)


def _batches(segment: LogSegment) -> Iterator[tuple[BatchHeader, bytes]]:
    for position, header in segment.headers_from(0):
        yield header, segment.read_at(position, header.size)


def _transaction_view(segments: list[LogSegment]) -> _TransactionView:
    view = _TransactionView()
    open_batches: dict[int, list[int]] = {}
    for segment in segments:
        for position, header in segment.headers_from(0):
            pid = header.producer_id
            if pid < 0:
                continue
            if header.is_control:
                marker, _ = control_marker(segment.read_at(position, header.size))
                pending = open_batches.pop(pid, [])
                if marker == ControlType.ABORT:
                    view.aborted.update(pending)
                continue
            view.last_batch_of_producer[pid] = header.base_offset
            if header.is_transactional:
                open_batches.setdefault(pid, []).append(header.base_offset)
    return view


def _latest_offsets(segments: list[LogSegment], txns: _TransactionView) -> dict[bytes, int]:
    latest: dict[bytes, int] = {}
    for segment in segments:
        for header, raw in _batches(segment):
            if header.is_control or header.base_offset in txns.aborted:
                continue
            try:
                records = decode_records(raw)
            except UnsupportedCompressionError:
                continue
            for record in records:
                if record.key is not None:
                    latest[record.key] = record.offset
    return latest


@dataclass
class _Cleaner:
    latest: dict[bytes, int]
    txns: _TransactionView
    tombstone_horizon_ms: int
    records_removed: int = 0
    tombstones_removed: int = 0

    def _keep(self, record: SimpleRecord) -> bool:
        if record.key is None:
            return True
        if self.latest.get(record.key, record.offset) != record.offset:
            return False
        if record.value is None and record.timestamp_ms <= self.tombstone_horizon_ms:
            self.tombstones_removed += 1
            return False
        return True

    def clean_batch(self, header: BatchHeader, raw: bytes) -> bytes:
        """The bytes to write for one batch: unchanged, rebuilt with fewer records, or b""."""
        if header.is_control:
            return raw
        if header.base_offset in self.txns.aborted:
            self.records_removed += header.record_count
            return b""
        try:
            records = decode_records(raw)
        except UnsupportedCompressionError:
            return raw
        kept = [r for r in records if self._keep(r)]
        self.records_removed += len(records) - len(kept)
        if len(kept) == len(records):
            return raw
        is_last_of_producer = self.txns.last_batch_of_producer.get(header.producer_id) == header.base_offset
        if not kept and not (header.producer_id >= 0 and is_last_of_producer):
            return b""
        return encode_batch(
            kept,
            base_offset=header.base_offset,
            last_offset_delta=header.last_offset_delta,
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
            attributes=header.attributes,
            timestamp_ms=header.base_timestamp,
            max_timestamp_ms=header.max_timestamp,
            partition_leader_epoch=header.partition_leader_epoch,
        )


def _groups(segments: list[LogSegment], segment_bytes: int) -> list[list[LogSegment]]:
    groups: list[list[LogSegment]] = []
    for segment in segments:
        if groups and sum(s.size for s in groups[-1]) + segment.size <= segment_bytes:
            groups[-1].append(segment)
        else:
            groups.append([segment])
    return groups


def compact_segments(
    directory: Path,
    segments: list[LogSegment],
    config: LogConfig,
    *,
    first_uncleanable_offset: int,
    now_ms: int,
) -> tuple[list[LogSegment], CompactionStats]:
    """Compact the cleanable closed segments of ``segments``; returns the new segment list and stats.

    1. Choose the cleanable prefix: closed segments ending at or before ``first_uncleanable_offset``
       whose newest timestamp is at least ``min.compaction.lag.ms`` old.
    2. Scan every batch header of the log to find aborted transactional batches and each producer's
       last batch.
    3. Map every key in the cleanable range to the offset of its latest record.
    4. For each group of consecutive cleanable segments (together <= ``segment.bytes``) write the
       retained batches, offsets unchanged, to ``<group base>.log.cleaned`` and fsync it. A crash
       here leaves the old segments intact; recovery deletes the ``.cleaned`` file.
    5. Rename it to ``.log.swap`` and fsync the directory: the swap point. From here on recovery
       finishes the swap instead.
    6. Close the replaced segments, delete their files, rename the swap to ``.log``, fsync the
       directory, and open the new segment with rebuilt indexes.
    7. Write the new segment's ``.txnindex``: the replaced segments' entries, in order (atomically,
       fsynced). A crash between 6 and 7 leaves it missing and recovery rebuilds it from the log.
    """
    # Step 1
    cleanable: list[LogSegment] = []
    for segment in segments[:-1]:
        if segment.next_offset > first_uncleanable_offset:
            break
        if now_ms - segment.largest_timestamp() < config.min_compaction_lag_ms:
            break
        cleanable.append(segment)
    if not cleanable:
        return segments, CompactionStats()
    # Step 2
    txns = _transaction_view(segments)
    # Step 3
    cleaner = _Cleaner(_latest_offsets(cleanable, txns), txns, now_ms - config.delete_retention_ms)
    result: list[LogSegment] = []
    bytes_before = bytes_after = 0
    for group in _groups(cleanable, config.segment_bytes):
        base = group[0].base_offset
        cleaned_path = segment_path(directory, base, CLEANED_SUFFIX)
        # Step 4
        fd = os.open(cleaned_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for segment in group:
                bytes_before += segment.size
                out = bytearray()
                for header, raw in _batches(segment):
                    out += cleaner.clean_batch(header, raw)
                os.write(fd, out)
                bytes_after += len(out)
            os.fsync(fd)
        finally:
            os.close(fd)
        # Step 5
        cleaned_path.rename(segment_path(directory, base, SWAP_SUFFIX))
        fsync_path(directory)
        # Step 6
        aborted = [entry for segment in group for entry in segment.txn_index.entries]
        for segment in group:
            segment.close()
        complete_swap(directory, base)
        new_segment, _ = LogSegment.open_existing(directory, base, config.index_interval_bytes, full_recovery=True)
        # Step 7
        new_segment.txn_index.rewrite(aborted)
        new_segment.txn_index_stale = False
        new_segment.seal()
        result.append(new_segment)
    stats = CompactionStats(
        segments_cleaned=len(cleanable),
        records_removed=cleaner.records_removed,
        tombstones_removed=cleaner.tombstones_removed,
        bytes_before=bytes_before,
        bytes_after=bytes_after,
    )
    log.info(
        "storage.compaction_done",
        directory=directory,
        segments=stats.segments_cleaned,
        records_removed=stats.records_removed,
        bytes_before=bytes_before,
        bytes_after=bytes_after,
    )
    return result + segments[len(cleanable) :], stats
