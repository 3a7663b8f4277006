"""``Rebalancer``: the rebalance state machine of a group, and the deadlines that drive it.

A rebalance goes Stable/CompletingRebalance/Empty -> PreparingRebalance (members rejoin) ->
CompletingRebalance (the leader assigns) -> Stable. This module moves groups along it; the request
handlers in ``membership`` call into it.
"""

from __future__ import annotations

from collections.abc import Callable

from kio.schema.errors import ErrorCode

from onceflow.broker.groups.config import GroupConfig
from onceflow.broker.groups.group import Group
from onceflow.broker.groups.member import Member
from onceflow.broker.groups.results import JoinResult, SyncResult
from onceflow.broker.groups.state import GroupState, can_rebalance
from onceflow.broker.groups.store import GroupStore
from onceflow.broker.statelog import StateLogError
from onceflow.core.logging import get_logger

logger = get_logger(__name__)


class Rebalancer:
    """Prepares and completes rebalances, and expires sessions, pending members and pending syncs.

    Guarantees (as Kafka's classic GroupCoordinator):

    * A rebalance completes as soon as every member has rejoined, or when the rebalance timeout (the
      largest of the members') expires; dynamic members that did not rejoin are then removed.
    * The first rebalance of an Empty group waits ``initial_rebalance_delay_ms``, extended by the same
      delay while new members keep arriving, up to the rebalance timeout.
    * A member whose session expires is removed and the group rebalances. Members parked in a JoinGroup
      or SyncGroup are not expected to heartbeat; a parked new member expires after
      ``new_member_join_timeout_ms``.
    * Members that do not send SyncGroup within the rebalance timeout after the join completes are
      removed and the group rebalances.
    """

    def __init__(self, config: GroupConfig, store: GroupStore, clock: Callable[[], float]) -> None:
        self._config = config
        self._store = store
        self._clock = clock

    def schedule_heartbeat(self, member: Member, timeout_ms: int | None = None) -> None:
        """Expect the next heartbeat of ``member`` within its session timeout (or ``timeout_ms``)."""
        timeout = member.client.session_timeout_ms if timeout_ms is None else timeout_ms
        member.session_deadline = self._clock() + timeout / 1000

    def maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        """Start a rebalance unless one is already being prepared."""
        if can_rebalance(group.state):
            self.prepare_rebalance(group, reason)

    def prepare_rebalance(self, group: Group, reason: str) -> None:
        """Move the group to PreparingRebalance, arm the join deadline, and complete the join if it can.

        Members parked in SyncGroup are answered REBALANCE_IN_PROGRESS, so that they rejoin. As Kafka's
        ``tryCompleteElseWatch``, the join completes at once when every member has already rejoined: in
        particular a group whose last member left becomes Empty now, not on the next timer tick (a
        JoinGroup in between would find a rebalance with no members to agree on protocols with).
        """
        if group.is_state(GroupState.COMPLETING_REBALANCE):
            self.propagate_assignment(group, ErrorCode.rebalance_in_progress)
        group.pending_sync.clear()
        group.sync_deadline = None
        now = self._clock()
        delay = self._config.initial_rebalance_delay_ms
        if group.is_state(GroupState.EMPTY) and delay > 0:
            group.initial_delay_ms = delay
            group.initial_delay_remaining_ms = max(group.rebalance_timeout_ms - delay, 0)
            group.new_member_added = False
            group.join_deadline = now + delay / 1000
        else:
            group.initial_delay_remaining_ms = None
            group.join_deadline = now + group.rebalance_timeout_ms / 1000
        group.transition(GroupState.PREPARING_REBALANCE)
        logger.info(
            "group.preparing_rebalance",
            group=group.group_id,
            generation=group.generation_id,
            members=len(group.members),
            reason=repr(reason),
        )
        self.try_complete_join(group)

    def try_complete_join(self, group: Group) -> None:
        """Complete the join phase now if every member has rejoined (not during the initial delay)."""
        if (
            group.is_state(GroupState.PREPARING_REBALANCE)
            and group.initial_delay_remaining_ms is None
            and group.has_all_members_joined()
        ):
            self.complete_join(group)

    def complete_join(self, group: Group) -> None:
        """End the join phase and start the next generation.

        Steps:

        1. Remove dynamic members that did not rejoin (static members keep their place).
        2. Make sure the leader rejoined; if no member rejoined, wait another rebalance timeout.
        3. Bump the generation: CompletingRebalance with a selected protocol, or Empty.
        4. An Empty group is persisted; otherwise every parked JoinGroup is answered (the leader gets
           the member list), and members must send SyncGroup within the rebalance timeout.
        """
        # Step 1
        for member in group.not_yet_rejoined():
            if not member.is_static:
                group.remove(member.member_id)
                logger.info("group.removed_member_that_did_not_rejoin", group=group.group_id, member=member.member_id)
        # Step 2
        if group.members and not group.elect_joined_leader():
            logger.error("group.rebalance_cannot_complete_no_member_rejoined", group=group.group_id)
            group.initial_delay_remaining_ms = None
            group.join_deadline = self._clock() + group.rebalance_timeout_ms / 1000
            return
        # Step 3
        group.join_deadline = None
        group.initial_delay_remaining_ms = None
        group.init_next_generation()
        # Step 4
        if group.is_state(GroupState.EMPTY):
            logger.info("group.is_empty", group=group.group_id, generation=group.generation_id)
            try:
                self._store.store_group(group.group_id, group.to_stored())
            except StateLogError:
                # Not fatal: a restart restores the previous generation, whose members then expire.
                logger.exception("group.storing_empty_group_failed", group=group.group_id)
            return
        logger.info(
            "group.join_completed",
            group=group.group_id,
            generation=group.generation_id,
            protocol=group.protocol_name,
            leader=group.leader_id,
            members=len(group.members),
        )
        for member in group.members.values():
            is_leader = group.is_leader(member.member_id)
            member.answer_join(group.join_result(member.member_id, with_members=is_leader))
            member.is_new = False
            self.schedule_heartbeat(member)
            group.pending_sync.add(member.member_id)
        group.sync_deadline = self._clock() + group.rebalance_timeout_ms / 1000

    def propagate_assignment(self, group: Group, error: ErrorCode) -> None:
        """Answer every parked SyncGroup: each member's assignment, or ``error`` (assignments reset)."""
        for member in group.members.values():
            if error != ErrorCode.none:
                member.assignment = b""
                answered = member.answer_sync(SyncResult.failed(error))
            else:
                answered = member.answer_sync(
                    SyncResult(ErrorCode.none, group.protocol_type, group.protocol_name, member.assignment)
                )
            if answered:
                self.schedule_heartbeat(member)

    def remove_member(self, group: Group, member: Member, reason: str) -> None:
        """Remove a member (answering its parked requests UNKNOWN_MEMBER_ID) and rebalance the rest."""
        member.answer_join(JoinResult.failed(ErrorCode.unknown_member_id))
        member.answer_sync(SyncResult.failed(ErrorCode.unknown_member_id))
        group.remove(member.member_id)
        logger.info(
            "group.removed_member",
            group=group.group_id,
            generation=group.generation_id,
            member=member.member_id,
            instance=member.group_instance_id,
            reason=repr(reason),
        )
        if group.is_state(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.maybe_prepare_rebalance(group, reason)
        elif group.is_state(GroupState.PREPARING_REBALANCE):
            self.try_complete_join(group)

    def remove_pending_member(self, group: Group, member_id: str, reason: str) -> None:
        """Forget a member id issued by MEMBER_ID_REQUIRED that never joined."""
        group.remove(member_id)
        logger.info("group.removed_pending_member", group=group.group_id, member=member_id, reason=repr(reason))
        self.try_complete_join(group)

    def on_tick(self, group: Group) -> None:
        """Act on every deadline of ``group`` that has passed."""
        now = self._clock()
        for member_id, deadline in list(group.pending_members.items()):
            if deadline <= now:
                self.remove_pending_member(group, member_id, "pending member session timeout")
        for member in list(group.members.values()):
            if member.session_deadline is not None and member.session_deadline <= now:
                self._on_session_deadline(group, member)
        if group.join_deadline is not None and group.join_deadline <= now:
            self._on_join_deadline(group)
        if group.sync_deadline is not None and group.sync_deadline <= now:
            self._on_sync_deadline(group)

    def _on_session_deadline(self, group: Group, member: Member) -> None:
        if not member.is_new and (member.awaiting_join or member.awaiting_sync):
            member.session_deadline = None
            return
        reason = "new member join timeout" if member.is_new else "session timeout"
        self.remove_member(group, member, reason)

    def _on_join_deadline(self, group: Group) -> None:
        remaining = group.initial_delay_remaining_ms
        if remaining is not None and group.new_member_added and remaining > 0:
            delay = min(group.initial_delay_ms, remaining)
            group.initial_delay_remaining_ms = remaining - delay
            group.new_member_added = False
            group.join_deadline = self._clock() + delay / 1000
            return
        group.join_deadline = None
        self.complete_join(group)

    def _on_sync_deadline(self, group: Group) -> None:
        group.sync_deadline = None
        if not group.is_state(GroupState.COMPLETING_REBALANCE, GroupState.STABLE) or not group.pending_sync:
            return
        missing = sorted(group.pending_sync)
        for member_id in missing:
            member = group.members.get(member_id)
            if member is not None:
                member.answer_sync(SyncResult.failed(ErrorCode.unknown_member_id))
            group.remove(member_id)
        logger.info("group.removed_members_that_did_not_sync", group=group.group_id, members=missing)
        self.prepare_rebalance(group, f"members {missing} did not send SyncGroup in time")
