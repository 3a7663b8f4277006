"""``OffsetCommits``: OffsetCommit, OffsetFetch and transactional offset commits (KIP-98, KIP-447)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from kio.schema.errors import ErrorCode

from onceflow.broker.groups.group import Group
from onceflow.broker.groups.offsets import TopicPartition
from onceflow.broker.groups.requests import Committer, TxnOffsetCommitRequest
from onceflow.broker.groups.results import OffsetAndMetadata
from onceflow.broker.groups.running import RunningGroups
from onceflow.broker.groups.state import GroupState
from onceflow.broker.statelog import StateLogError
from onceflow.core.logging import get_logger

logger = get_logger(__name__)


class OffsetCommits:
    """Committed and transactional offsets of every group.

    Guarantees:

    * An offset is in the state log before the call that commits (or stages) it returns.
    * Staged transactional offsets are invisible to ``fetch`` until ``complete_txn`` commits them, and
      are dropped if it aborts. A committed transaction's offset replaces a partition's committed offset
      only if it was staged after that offset was committed. Completing is idempotent.
    * Commits are checked as Kafka checks them: a member must be current (generation, member id,
      instance id); a simple commit (generation -1, no member id) only while the group is Empty;
      REBALANCE_IN_PROGRESS while the group is CompletingRebalance.
    """

    def __init__(self, running: RunningGroups, wall_clock: Callable[[], float] = time.time) -> None:
        self._running = running
        self._wall_clock = wall_clock

    def commit(
        self, group_id: str, committer: Committer, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> dict[TopicPartition, ErrorCode]:
        """Handle OffsetCommit; returns an error code per partition."""
        group = self._running.groups.get(group_id)
        if group is None:
            if committer.generation_id >= 0:
                return dict.fromkeys(offsets, ErrorCode.illegal_generation)
            group = self._running.groups[group_id] = Group(group_id)
        error = self._validate(group, committer, transactional=False)
        if error is None and group.is_state(GroupState.COMPLETING_REBALANCE):
            error = ErrorCode.rebalance_in_progress
        if error is not None:
            return dict.fromkeys(offsets, error)
        member = group.members.get(committer.member_id)
        if member is not None:
            self._running.rebalancer.schedule_heartbeat(member)
        accepted, results = self._check_metadata(offsets)
        try:
            stored = self._running.store.store_offsets(group_id, accepted)
        except StateLogError as error:
            # Nothing was committed (the state log rolled the write back); clients retry.
            logger.warning("group.offset_commit_not_stored", group=group_id, partitions=len(accepted), reason=error)
            return {**results, **dict.fromkeys(accepted, ErrorCode.coordinator_not_available)}
        for partition, entry in stored.items():
            group.offsets.commit(partition, entry)
        logger.debug(
            "group.offsets_committed",
            group=group_id,
            generation=committer.generation_id,
            member=committer.member_id,
            partitions=len(accepted),
        )
        return results

    def fetch(
        self, group_id: str, partitions: Sequence[TopicPartition] | None, require_stable: bool = False
    ) -> tuple[ErrorCode, dict[TopicPartition, OffsetAndMetadata | None]]:
        """Handle OffsetFetch: the committed offsets of ``partitions`` (``None``: every committed one).

        A partition without a committed offset maps to ``None``. With ``require_stable``, partitions
        with staged transactional offsets map to ``None`` and the error is UNSTABLE_OFFSET_COMMIT; the
        protocol layer reports that error on those partitions (see ``has_pending``), as Kafka does.
        """
        group = self._running.groups.get(group_id)
        if group is None:
            return ErrorCode.none, dict.fromkeys(partitions or [], None)
        result: dict[TopicPartition, OffsetAndMetadata | None]
        if partitions is None:
            result = dict(group.offsets.all_committed())
        else:
            result = {partition: group.offsets.committed(partition) for partition in partitions}
        unstable = [partition for partition in result if group.offsets.has_pending(partition)]
        if not require_stable or not unstable:
            return ErrorCode.none, result
        for partition in unstable:
            result[partition] = None
        return ErrorCode.unstable_offset_commit, result

    def stage_txn(self, request: TxnOffsetCommitRequest) -> dict[TopicPartition, ErrorCode]:
        """Handle TxnOffsetCommit: stage offsets as pending in the request's producer's transaction."""
        group_id, producer_id = request.group_id, request.producer_id
        group = self._running.groups.get(group_id)
        if group is None:
            group = self._running.groups[group_id] = Group(group_id)
        error = self._validate(group, request.committer, transactional=True)
        if error is not None:
            return dict.fromkeys(request.offsets, error)
        accepted, results = self._check_metadata(request.offsets)
        staged = self._running.store.stage_txn_offsets(group_id, producer_id, request.producer_epoch, accepted)
        for partition, entry in staged.items():
            group.offsets.stage(producer_id, partition, entry)
        logger.info(
            "group.transactional_offsets_staged",
            group=group_id,
            pid=producer_id,
            epoch=request.producer_epoch,
            partitions=len(staged),
        )
        return results

    def complete_txn(self, group_id: str, producer_id: int, commit: bool) -> None:
        """Commit or abort the offsets ``producer_id`` staged in ``group_id`` (idempotent).

        Steps:

        1. Find the staged offsets; nothing staged means nothing to do (a retried completion).
        2. On commit, pick those that win over the committed offsets (staged after them).
        3. In one atomic write: tombstone every staged record and write the winners as committed.
        4. Apply the same change in memory.
        """
        # Step 1
        group = self._running.groups.get(group_id)
        staged = group.offsets.pending(producer_id) if group is not None else {}
        if group is None or not staged:
            return
        # Step 2
        winners = group.offsets.winners_on_commit(producer_id) if commit else {}
        # Step 3
        written = self._running.store.complete_txn(
            group_id, producer_id, staged, {partition: entry.value for partition, entry in winners.items()}
        )
        # Step 4
        group.offsets.finish_transaction(producer_id, written)
        logger.info(
            "group.transactional_offsets_" + ("committed" if commit else "aborted"),
            group=group_id,
            pid=producer_id,
            partitions=len(staged),
            committed=len(written),
        )

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether an open transaction has staged an offset for the partition in the group."""
        group = self._running.groups.get(group_id)
        return group is not None and group.offsets.has_pending((topic, partition))

    @staticmethod
    def _validate(group: Group, committer: Committer, *, transactional: bool) -> ErrorCode | None:
        if group.is_state(GroupState.DEAD):
            return ErrorCode.coordinator_not_available
        if committer.is_member:
            return group.validate_member(committer.member_id, committer.group_instance_id, committer.generation_id)
        if not transactional and not group.is_state(GroupState.EMPTY):
            # Only members may commit to a group that has members.
            return ErrorCode.unknown_member_id
        return None

    def _check_metadata(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> tuple[dict[TopicPartition, OffsetAndMetadata], dict[TopicPartition, ErrorCode]]:
        """Split offsets into those accepted (commit time filled in) and per-partition results."""
        now_ms = int(self._wall_clock() * 1000)
        accepted: dict[TopicPartition, OffsetAndMetadata] = {}
        results: dict[TopicPartition, ErrorCode] = {}
        for partition, offset in offsets.items():
            if offset.metadata is not None and len(offset.metadata.encode()) > self._running.config.max_metadata_bytes:
                results[partition] = ErrorCode.offset_metadata_too_large
                continue
            stamped = offset if offset.commit_timestamp_ms >= 0 else replace(offset, commit_timestamp_ms=now_ms)
            accepted[partition] = stamped
            results[partition] = ErrorCode.none
        return accepted, results
