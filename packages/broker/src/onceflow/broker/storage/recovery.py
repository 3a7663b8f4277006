"""Bringing a partition directory back to a consistent set of segments when the log is opened."""

from __future__ import annotations

from pathlib import Path

from onceflow.broker.storage.errors import CorruptRecordError
from onceflow.broker.storage.producer_state import ProducerStateManager
from onceflow.broker.storage.records import control_marker
from onceflow.broker.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    LogSegment,
    segment_path,
)
from onceflow.broker.storage.segment_scan import scan_next_offset
from onceflow.core.fsync import fsync_path
from onceflow.core.logging import get_logger

log = get_logger(__name__)

CLEANED_SUFFIX = ".log.cleaned"
SWAP_SUFFIX = ".log.swap"


def _base_offsets(directory: Path, suffix: str) -> list[int]:
    bases = []
    for path in directory.iterdir():
        stem = path.name[: -len(suffix)] if path.name.endswith(suffix) else ""
        if len(stem) == 20 and stem.isdigit():
            bases.append(int(stem))
    return sorted(bases)


def _delete_segment_files(directory: Path, base_offset: int) -> None:
    for suffix in SEGMENT_SUFFIXES:
        segment_path(directory, base_offset, suffix).unlink(missing_ok=True)


def complete_swap(directory: Path, swap_base: int) -> None:
    """Install a compacted ``<base>.log.swap``: drop the segments it replaces, then rename it.

    The swap file holds every retained batch of the segments whose base offsets lie in
    ``[swap_base, last offset in the swap]``, so deleting those before the rename loses nothing, and
    a crash between the two steps is finished by running this again. The replaced segments'
    ``.txnindex`` files go too; the caller writes the merged one, or recovery rebuilds it.
    """
    swap = segment_path(directory, swap_base, SWAP_SUFFIX)
    next_offset = scan_next_offset(swap)
    end = swap_base + 1 if next_offset is None else next_offset
    for base in _base_offsets(directory, LOG_SUFFIX):
        if swap_base <= base < end:
            _delete_segment_files(directory, base)
    swap.rename(segment_path(directory, swap_base, LOG_SUFFIX))
    fsync_path(directory)


def recover_segments(directory: Path, index_interval_bytes: int, topic_partition: str) -> list[LogSegment]:
    """Open every segment of a partition directory, repairing what a crash may have left.

    Guarantee: afterwards every segment holds only whole batches with valid CRCs at its tail, and
    every index is consistent with its log. Steps:

    1. Delete leftover ``.log.cleaned`` files: a compaction that crashed before its swap point changed
       nothing else, so its output is simply discarded.
    2. Complete each ``.log.swap`` (a compaction that crashed after its swap point), see
       :func:`complete_swap`.
    3. Delete index files whose ``.log`` is gone, and half-written ``.txnindex.tmp`` files.
    4. Open the segments in base-offset order. Closed segments keep their indexes when consistent
       and are rebuilt otherwise; the last (active) segment is always fully scanned: every CRC is
       checked, a torn tail is truncated at the last valid batch (logged with its size) and its
       indexes are rebuilt.
    5. If no segment exists, create an empty one at offset 0.
    """
    directory.mkdir(parents=True, exist_ok=True)
    # Step 1
    for base in _base_offsets(directory, CLEANED_SUFFIX):
        log.warning("storage.compaction_output_discarded", partition=topic_partition, base_offset=base)
        segment_path(directory, base, CLEANED_SUFFIX).unlink()
    # Step 2
    for base in _base_offsets(directory, SWAP_SUFFIX):
        log.warning("storage.compaction_swap_completed", partition=topic_partition, base_offset=base)
        complete_swap(directory, base)
    # Step 3
    bases = _base_offsets(directory, LOG_SUFFIX)
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        for base in set(_base_offsets(directory, suffix)) - set(bases):
            segment_path(directory, base, suffix).unlink()
    for tmp in directory.glob(f"*{TXN_INDEX_SUFFIX}.tmp"):
        tmp.unlink()
    # Step 4
    segments: list[LogSegment] = []
    for i, base in enumerate(bases):
        is_active = i == len(bases) - 1
        segment, truncated = LogSegment.open_existing(directory, base, index_interval_bytes, full_recovery=is_active)
        if truncated:
            log.warning("storage.torn_tail_truncated", partition=topic_partition, segment=base, bytes=truncated)
        if segments and segment.base_offset < segments[-1].next_offset:
            segment.close()
            raise CorruptRecordError(
                f"segment {base} overlaps the previous one ending at {segments[-1].next_offset}",
                topic_partition=topic_partition,
            )
        segments.append(segment)
    # Step 5
    if not segments:
        segments.append(LogSegment.create(directory, 0, index_interval_bytes))
    return segments


def replay_producer_state(segments: list[LogSegment], state: ProducerStateManager, start_offset: int) -> None:
    """Feed every idempotent batch and transaction marker from ``start_offset`` on into ``state``, and
    index the transactions aborted there.

    Index entries at or after ``start_offset`` are dropped first, since the replay writes them again
    (this also discards entries of a torn tail and entries a crash left without their marker). Only
    headers are read, plus the single record of each control batch (for its marker type).
    """
    for segment in segments:
        if segment.next_offset > start_offset:
            segment.txn_index.truncate_from(start_offset)
    _replay(segments, state, start_offset, segments[-1].next_offset)


def rebuild_stale_transaction_indexes(segments: list[LogSegment], end_offset: int, topic_partition: str) -> None:
    """Rebuild the entries below ``end_offset`` of every ``.txnindex`` that could not be loaded.

    The transactions are recovered by a header scan from the log start with a scratch producer state,
    so a transaction that began before the log start is indexed from its first batch still in the log:
    the same answer for every fetch, since the consumer filters only batches it receives.
    """
    stale = [s for s in segments if s.txn_index_stale]
    if not stale:
        return
    for segment in stale:
        segment.txn_index.rewrite([])
    scan_end = min(end_offset, stale[-1].next_offset)
    scratch = ProducerStateManager(topic_partition)
    _replay(segments, scratch, segments[0].base_offset, scan_end, only=set(map(id, stale)))
    for segment in stale:
        segment.txn_index_stale = False
        log.warning(
            "storage.txn_index_rebuilt",
            partition=topic_partition,
            segment=segment.base_offset,
            aborted=len(segment.txn_index),
        )


def _replay(
    segments: list[LogSegment],
    state: ProducerStateManager,
    start_offset: int,
    end_offset: int,
    *,
    only: set[int] | None = None,
) -> None:
    """Replay batches in ``[start_offset, end_offset)`` into ``state``; index aborts (in the segments
    whose ``id`` is in ``only``, when given)."""
    for segment in segments:
        if segment.next_offset <= start_offset:
            continue
        if segment.base_offset >= end_offset:
            return
        found = segment.find_batch(start_offset)
        if found is None:
            continue
        indexed = only is None or id(segment) in only
        for position, header in segment.headers_from(found[0]):
            if header.base_offset >= end_offset:
                return
            if header.producer_id < 0:
                continue
            if header.is_control:
                marker, coordinator_epoch = control_marker(segment.read_at(position, header.size))
                completed = state.record_control(
                    header.producer_id,
                    producer_epoch=header.producer_epoch,
                    marker=marker,
                    offset=header.base_offset,
                    coordinator_epoch=coordinator_epoch,
                    timestamp_ms=header.max_timestamp,
                )
                if indexed:
                    segment.txn_index.append_completed(completed, state.ongoing.first_unstable_offset())
            else:
                state.replay_batch(header)
