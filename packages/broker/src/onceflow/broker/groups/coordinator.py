"""``GroupCoordinator``: the classic (pre-KIP-848) Kafka group coordinator of the embedded broker."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from kio.schema.errors import ErrorCode

from onceflow.broker.groups.config import GroupConfig
from onceflow.broker.groups.exceptions import CoordinatorNotRunning
from onceflow.broker.groups.group import Group
from onceflow.broker.groups.membership import Membership
from onceflow.broker.groups.offset_commits import OffsetCommits
from onceflow.broker.groups.offsets import TopicPartition
from onceflow.broker.groups.rebalance import Rebalancer
from onceflow.broker.groups.requests import Committer, JoinRequest, SyncRequest, TxnOffsetCommitRequest
from onceflow.broker.groups.results import (
    GroupDescription,
    GroupListing,
    JoinResult,
    MemberDescription,
    OffsetAndMetadata,
    SyncResult,
)
from onceflow.broker.groups.running import RunningGroups
from onceflow.broker.groups.state import GroupState
from onceflow.broker.groups.store import GroupStore
from onceflow.broker.tasks import cancel_and_wait
from onceflow.core.logging import get_logger

logger = get_logger(__name__)


class _Running:
    """The parts that exist between ``start`` and ``stop``."""

    def __init__(self, groups: RunningGroups, membership: Membership, offsets: OffsetCommits):
        self.groups = groups
        self.membership = membership
        self.offsets = offsets
        self.timer: asyncio.Task[None] | None = None


class GroupCoordinator:
    """Consumer groups and their offsets, for every group of a single-node broker.

    A pure asyncio domain object: the protocol layer turns requests into these calls and the results
    into responses. It speaks Kafka's classic group protocol (JoinGroup v4+ with MEMBER_ID_REQUIRED,
    static membership, SyncGroup, Heartbeat, LeaveGroup), offsets (OffsetCommit/OffsetFetch), and
    KIP-447 transactional offsets for the transaction coordinator.

    Guarantees:

    * Offsets, staged transactional offsets and group metadata are in the state log (``data_dir``,
      fsynced if ``fsync``) before the call that changes them returns, and survive a restart.
    * After a restart each group is back in its last persisted generation: Stable with the members and
      assignments its leader last synced, or Empty. Members that keep heartbeating stay; the others are
      expired after their session timeout (UNKNOWN_MEMBER_ID), as in Kafka. An in-flight rebalance
      is lost: its members get ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID and rejoin.
    * Deadlines (sessions, rebalance and sync timeouts, the initial rebalance delay) are checked every
      ``timer_tick_ms`` by a background task, against ``clock`` (seconds, monotonic).
    * Before ``start`` and after ``stop`` requests are answered COORDINATOR_NOT_AVAILABLE (or raise
      ``CoordinatorNotRunning`` for the transaction coordinator's calls).
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        fsync: bool,
        group_initial_rebalance_delay_ms: int = 3000,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        group_min_session_timeout_ms: int = 6000,
        group_max_session_timeout_ms: int = 1_800_000,
        offset_metadata_max_bytes: int = 4096,
        new_member_join_timeout_ms: int = 300_000,
        timer_tick_ms: int = 50,
    ) -> None:
        self._data_dir = data_dir
        self._fsync = fsync
        self._clock = clock
        self._wall_clock = wall_clock
        self._config = GroupConfig(
            initial_rebalance_delay_ms=group_initial_rebalance_delay_ms,
            min_session_timeout_ms=group_min_session_timeout_ms,
            max_session_timeout_ms=group_max_session_timeout_ms,
            new_member_join_timeout_ms=new_member_join_timeout_ms,
            max_metadata_bytes=offset_metadata_max_bytes,
            timer_tick_ms=timer_tick_ms,
        )
        self._groups: dict[str, Group] = {}
        self._running: _Running | None = None

    async def start(self) -> None:
        """Load every group from the state log and start the deadline timer.

        Steps:

        1. Open the state log (truncating a torn tail) and replay it.
        2. Restore each group: its last persisted generation, committed and staged offsets. Restored
           members must heartbeat within their session timeout from now.
        3. Start the timer task.
        """
        if self._running is not None:
            return
        # Step 1
        store = GroupStore.open(self._data_dir, fsync=self._fsync)
        try:
            loaded = store.load()
        except BaseException:
            store.close()
            raise
        # Step 2
        now = self._clock()
        self._groups.clear()
        for group_id, state in loaded.items():
            group = Group(group_id)
            if state.metadata is not None:
                group.restore(state.metadata, session_deadline_base=now)
            for partition, entry in state.offsets.items():
                group.offsets.commit(partition, entry)
            for producer_id, staged in state.pending.items():
                for partition, entry in staged.items():
                    group.offsets.stage(producer_id, partition, entry)
            self._groups[group_id] = group
        shared = RunningGroups(self._groups, Rebalancer(self._config, store, self._clock), store, self._config)
        running = _Running(shared, Membership(shared, self._clock), OffsetCommits(shared, self._wall_clock))
        # Step 3
        running.timer = asyncio.create_task(self._run_timer(), name="group-coordinator-timer")
        self._running = running
        logger.info("group.coordinator_started", data_dir=self._data_dir, groups=len(self._groups))

    async def stop(self) -> None:
        """Stop the timer, answer parked requests NOT_COORDINATOR, and close the state log. Idempotent."""
        running, self._running = self._running, None
        if running is None:
            return
        await cancel_and_wait(running.timer)
        for group in self._groups.values():
            for member in group.members.values():
                member.answer_join(JoinResult.failed(ErrorCode.not_coordinator, member.member_id))
                member.answer_sync(SyncResult.failed(ErrorCode.not_coordinator))
        self._groups.clear()
        running.groups.store.close()
        logger.info("group.coordinator_stopped", data_dir=self._data_dir)

    def expire_deadlines(self) -> None:
        """Act on every passed deadline now (the timer task calls this every tick)."""
        running = self._require_running()
        for group in list(self._groups.values()):
            try:
                running.groups.rebalancer.on_tick(group)
            except Exception:
                # The timer must keep serving the other groups; the failure is reported here.
                logger.exception("group.deadline_handling_failed", group=group.group_id)

    async def join_group(self, request: JoinRequest) -> JoinResult:
        """JoinGroup. Returns when the rebalance completes (or at once: errors, MEMBER_ID_REQUIRED)."""
        if self._running is None:
            return JoinResult.failed(ErrorCode.coordinator_not_available, request.member_id)
        return await self._running.membership.join_group(request)

    async def sync_group(self, request: SyncRequest) -> SyncResult:
        """SyncGroup. The leader passes every member's assignment; followers wait for it."""
        if self._running is None:
            return SyncResult.failed(ErrorCode.coordinator_not_available)
        return await self._running.membership.sync_group(request)

    def heartbeat(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None) -> ErrorCode:
        """Heartbeat. REBALANCE_IN_PROGRESS while PreparingRebalance (NONE while CompletingRebalance)."""
        if self._running is None:
            return ErrorCode.coordinator_not_available
        return self._running.membership.heartbeat(group_id, generation_id, member_id, group_instance_id)

    def leave_group(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """LeaveGroup for ``(member_id, group_instance_id)`` pairs; each answer says how it went."""
        if self._running is None:
            return ErrorCode.coordinator_not_available, []
        return self._running.membership.leave_group(group_id, members)

    def commit_offsets(
        self, group_id: str, committer: Committer, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> dict[TopicPartition, ErrorCode]:
        """OffsetCommit. ``Committer()`` (generation -1, no member id) is a simple commit (Empty groups only)."""
        if self._running is None:
            return dict.fromkeys(offsets, ErrorCode.coordinator_not_available)
        return self._running.offsets.commit(group_id, committer, offsets)

    def fetch_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition] | None, require_stable: bool = False
    ) -> tuple[ErrorCode, dict[TopicPartition, OffsetAndMetadata | None]]:
        """OffsetFetch (``None`` partitions: all). See ``OffsetCommits.fetch`` for UNSTABLE_OFFSET_COMMIT."""
        if self._running is None:
            return ErrorCode.coordinator_not_available, {}
        return self._running.offsets.fetch(group_id, partitions, require_stable)

    def stage_txn_offsets(self, request: TxnOffsetCommitRequest) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit: durably stage offsets, pending until ``complete_txn_offsets``."""
        if self._running is None:
            return dict.fromkeys(request.offsets, ErrorCode.coordinator_not_available)
        return self._running.offsets.stage_txn(request)

    def complete_txn_offsets(self, group_id: str, producer_id: int, commit: bool) -> None:
        """Durably commit (or abort) the offsets ``producer_id`` staged in the group. Idempotent."""
        self._require_running().offsets.complete_txn(group_id, producer_id, commit)

    def has_pending_txn_offsets(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether an open transaction has staged an offset for the partition in the group."""
        return self._require_running().offsets.has_pending(group_id, topic, partition)

    def list_groups(self, states_filter: Sequence[str] = ()) -> list[GroupListing]:
        """ListGroups; ``states_filter`` (case-insensitive state names) keeps only groups in those states."""
        if self._running is None:
            return []
        wanted = {state.casefold() for state in states_filter}
        return [
            GroupListing(group.group_id, group.protocol_type or "", group.state.value)
            for group in self._groups.values()
            if not group.is_state(GroupState.DEAD) and (not wanted or group.state.value.casefold() in wanted)
        ]

    def describe_group(self, group_id: str) -> GroupDescription:
        """DescribeGroups for one group. Member metadata and assignments are shown only when Stable."""
        if self._running is None:
            return GroupDescription(ErrorCode.coordinator_not_available, group_id, "", "", "", [])
        group = self._groups.get(group_id)
        if group is None:
            return GroupDescription(ErrorCode.none, group_id, GroupState.DEAD.value, "", "", [])
        stable = group.is_state(GroupState.STABLE)
        protocol = group.protocol_name or ""
        return GroupDescription(
            error=ErrorCode.none,
            group_id=group_id,
            state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_data=protocol if stable else "",
            members=[
                MemberDescription(
                    member_id=member.member_id,
                    group_instance_id=member.group_instance_id,
                    client_id=member.client.client_id,
                    client_host=member.client.client_host,
                    metadata=member.metadata(protocol) if stable else b"",
                    assignment=member.assignment if stable else b"",
                )
                for member in group.members.values()
            ],
        )

    def delete_group(self, group_id: str) -> ErrorCode:
        """DeleteGroups for one group: only an Empty group, with its offsets (staged ones included)."""
        running = self._running
        if running is None:
            return ErrorCode.coordinator_not_available
        group = self._groups.get(group_id)
        if group is None or group.is_state(GroupState.DEAD):
            return ErrorCode.group_id_not_found
        if not group.is_state(GroupState.EMPTY):
            return ErrorCode.non_empty_group
        staged = [
            (producer_id, partition)
            for producer_id, offsets in group.offsets.all_pending().items()
            for partition in offsets
        ]
        running.groups.store.delete_group(group_id, group.offsets.all_committed(), staged)
        group.transition(GroupState.DEAD)
        group.offsets.clear()
        del self._groups[group_id]
        logger.info("group.deleted", group=group_id)
        return ErrorCode.none

    def _require_running(self) -> _Running:
        if self._running is None:
            raise CoordinatorNotRunning(f"group coordinator for {self._data_dir} is not running")
        return self._running

    async def _run_timer(self) -> None:
        tick = self._config.timer_tick_ms / 1000
        while True:
            await asyncio.sleep(tick)
            self.expire_deadlines()
