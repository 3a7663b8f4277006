"""``Membership``: the JoinGroup, SyncGroup, Heartbeat and LeaveGroup handlers of the classic protocol."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping, Sequence

from kio.schema.errors import ErrorCode

from onceflow.broker.groups.group import Group
from onceflow.broker.groups.member import Member
from onceflow.broker.groups.member_client import MemberClient
from onceflow.broker.groups.requests import JoinRequest, SyncRequest
from onceflow.broker.groups.results import NO_MEMBER_ID, JoinResult, SyncResult
from onceflow.broker.groups.running import RunningGroups
from onceflow.broker.groups.state import GroupState
from onceflow.broker.statelog import StateLogError
from onceflow.core.logging import get_logger

logger = get_logger(__name__)


class Membership:
    """Group membership requests, answered as Kafka's classic GroupCoordinator answers them.

    Joins and syncs that must wait for the rest of the group are parked on futures: a JoinGroup until
    the rebalance completes, a follower's SyncGroup until the leader's assignment is stored. Parked
    futures are shielded, so a caller that gives up (cancellation) does not change the group: like a
    broker whose response could not be delivered, the member still counts as having joined.
    """

    def __init__(self, running: RunningGroups, clock: Callable[[], float]) -> None:
        self._running = running
        self._clock = clock

    async def join_group(self, request: JoinRequest) -> JoinResult:
        """Handle JoinGroup; returns when the member's generation is decided (or with an error)."""
        group_id, member_id, session_timeout_ms = request.group_id, request.member_id, request.session_timeout_ms
        if not group_id:
            return JoinResult.failed(ErrorCode.invalid_group_id, member_id)
        config = self._running.config
        if not config.min_session_timeout_ms <= session_timeout_ms <= config.max_session_timeout_ms:
            return JoinResult.failed(ErrorCode.invalid_session_timeout, member_id)
        is_unknown_member = member_id == NO_MEMBER_ID
        group = self._running.groups.get(group_id)
        if group is None:
            if not is_unknown_member:
                return JoinResult.failed(ErrorCode.unknown_member_id, member_id)
            group = self._running.groups[group_id] = Group(group_id)
        if group.is_state(GroupState.DEAD):
            return JoinResult.failed(ErrorCode.coordinator_not_available, member_id)
        if not group.supports_protocols(request.protocol_type, [name for name, _ in request.protocols]):
            return JoinResult.failed(ErrorCode.inconsistent_group_protocol, member_id)
        logger.info(
            "join",
            group=group_id,
            member=member_id or "<new>",
            instance=request.group_instance_id,
            client=request.client_id,
            state=group.state.value,
            reason=repr(request.reason),
        )
        candidate = Member(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client=MemberClient(
                client_id=request.client_id,
                client_host=request.client_host,
                rebalance_timeout_ms=request.rebalance_timeout_ms,
                session_timeout_ms=session_timeout_ms,
            ),
            protocol_type=request.protocol_type,
            protocols=list(request.protocols),
        )
        if is_unknown_member:
            answer = self._join_new_member(group, candidate, request.require_known_member_id)
        else:
            answer = self._join_known_member(group, candidate)
        self._running.rebalancer.try_complete_join(group)
        if isinstance(answer, JoinResult):
            return answer
        return await asyncio.shield(answer)

    async def sync_group(self, request: SyncRequest) -> SyncResult:
        """Handle SyncGroup; a follower's answer waits until the leader's assignment is stored."""
        group = self._running.groups.get(request.group_id)
        if group is None:
            return SyncResult.failed(ErrorCode.unknown_member_id)
        member_id = request.member_id
        error = self._validate_member(group, member_id, request.group_instance_id, request.generation_id)
        if error is None and (
            (request.protocol_type is not None and request.protocol_type != group.protocol_type)
            or (request.protocol_name is not None and request.protocol_name != group.protocol_name)
        ):
            error = ErrorCode.inconsistent_group_protocol
        if error is not None:
            return SyncResult.failed(error)
        member = group.members[member_id]
        match group.state:
            case GroupState.EMPTY:
                return SyncResult.failed(ErrorCode.unknown_member_id)
            case GroupState.PREPARING_REBALANCE:
                return SyncResult.failed(ErrorCode.rebalance_in_progress)
            case GroupState.STABLE:
                self._synced(group, member_id)
                self._running.rebalancer.schedule_heartbeat(member)
                return SyncResult(ErrorCode.none, group.protocol_type, group.protocol_name, member.assignment)
            case _:
                waiter: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
                member.answer_sync(SyncResult.failed(ErrorCode.rebalance_in_progress))
                member.sync_waiter = waiter
                self._synced(group, member_id)
                if group.is_leader(member_id):
                    self._complete_sync(group, member_id, request.assignments)
                return await asyncio.shield(waiter)

    def heartbeat(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None) -> ErrorCode:
        """Handle Heartbeat: NONE, REBALANCE_IN_PROGRESS (rejoin), or why the member is not current."""
        group = self._running.groups.get(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        error = self._validate_member(group, member_id, group_instance_id, generation_id)
        if error is not None:
            return error
        if group.is_state(GroupState.EMPTY):
            return ErrorCode.unknown_member_id
        self._running.rebalancer.schedule_heartbeat(group.members[member_id])
        if group.is_state(GroupState.PREPARING_REBALANCE):
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    def leave_group(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """Handle LeaveGroup (KIP-345 batch form): each member leaves, and the group rebalances.

        A member may be named by ``group.instance.id`` alone (empty member id), for admin removal.
        """
        group = self._running.groups.get(group_id)
        if group is None:
            return ErrorCode.none, [(mid, iid, ErrorCode.unknown_member_id) for mid, iid in members]
        if group.is_state(GroupState.DEAD):
            return ErrorCode.coordinator_not_available, []
        results: list[tuple[str, str | None, ErrorCode]] = []
        for member_id, group_instance_id in members:
            results.append((member_id, group_instance_id, self._leave(group, member_id, group_instance_id)))
        return ErrorCode.none, results

    def _join_new_member(
        self, group: Group, candidate: Member, require_known_member_id: bool
    ) -> JoinResult | asyncio.Future[JoinResult]:
        prefix = candidate.group_instance_id or candidate.client.client_id
        candidate.member_id = f"{prefix}-{uuid.uuid4()}"
        instance_id = candidate.group_instance_id
        if instance_id is not None:
            old_member_id = group.current_static_member_id(instance_id)
            if old_member_id is not None:
                return self._replace_static_member(group, old_member_id, candidate)
        elif require_known_member_id:
            group.pending_members[candidate.member_id] = self._clock() + candidate.client.session_timeout_ms / 1000
            logger.info("group.member_id_required", group=group.group_id, member=candidate.member_id)
            return JoinResult.failed(ErrorCode.member_id_required, candidate.member_id)
        return self._add_member(group, candidate)

    def _join_known_member(self, group: Group, candidate: Member) -> JoinResult | asyncio.Future[JoinResult]:
        member_id = candidate.member_id
        if member_id in group.pending_members:
            if candidate.group_instance_id is not None:
                return JoinResult.failed(ErrorCode.unknown_member_id, member_id)
            return self._add_member(group, candidate)
        error = self._validate_member(group, member_id, candidate.group_instance_id, None)
        if error is not None:
            return JoinResult.failed(error, member_id)
        member = group.members[member_id]
        match group.state:
            case GroupState.PREPARING_REBALANCE:
                return self._update_member(group, member, candidate, "member rejoined during rebalance")
            case GroupState.COMPLETING_REBALANCE if member.matches(candidate.protocols):
                # The member lost its JoinGroup answer: send the current generation again.
                return group.join_result(member_id, with_members=group.is_leader(member_id))
            case GroupState.COMPLETING_REBALANCE:
                return self._update_member(group, member, candidate, "member metadata changed")
            case GroupState.STABLE if group.is_leader(member_id):
                return self._update_member(group, member, candidate, "leader rejoined")
            case GroupState.STABLE if not member.matches(candidate.protocols):
                return self._update_member(group, member, candidate, "member metadata changed")
            case GroupState.STABLE:
                return group.join_result(member_id, with_members=False)
            case _:
                logger.warning(
                    "group.rejoin_in_unexpected_state", group=group.group_id, member=member_id, state=group.state.value
                )
                return JoinResult.failed(ErrorCode.unknown_member_id, member_id)

    def _add_member(self, group: Group, member: Member) -> asyncio.Future[JoinResult]:
        member.is_new = True
        # Kept here: preparing the rebalance may complete the join at once, which clears join_waiter.
        waiter: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        member.join_waiter = waiter
        if group.is_state(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._running.rebalancer.schedule_heartbeat(member, self._running.config.new_member_join_timeout_ms)
        logger.info(
            "group.member_added", group=group.group_id, member=member.member_id, instance=member.group_instance_id
        )
        self._running.rebalancer.maybe_prepare_rebalance(group, f"member {member.member_id} joined")
        return waiter

    def _update_member(
        self, group: Group, member: Member, candidate: Member, reason: str
    ) -> asyncio.Future[JoinResult]:
        member.protocols = candidate.protocols
        member.client = candidate.client
        # A duplicate JoinGroup supersedes the parked one (its caller has given up and retried).
        member.answer_join(JoinResult.failed(ErrorCode.rebalance_in_progress, member.member_id))
        waiter: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        member.join_waiter = waiter
        self._running.rebalancer.maybe_prepare_rebalance(group, f"{reason} ({member.member_id})")
        return waiter

    def _replace_static_member(
        self, group: Group, old_member_id: str, candidate: Member
    ) -> JoinResult | asyncio.Future[JoinResult]:
        """A static member rejoined with an unknown member id: it takes over its instance id."""
        assert candidate.group_instance_id is not None
        previous_leader = group.leader_id
        member = group.replace_static_member(candidate.group_instance_id, old_member_id, candidate.member_id)
        logger.info(
            "group.static_member_replaced",
            group=group.group_id,
            instance=candidate.group_instance_id,
            old_member=old_member_id,
            member=member.member_id,
        )
        self._running.rebalancer.schedule_heartbeat(member)
        old_protocols = member.protocols
        member.protocols = candidate.protocols
        if group.is_state(GroupState.STABLE) and group.select_protocol() == group.protocol_name:
            # Same protocol: no rebalance. Persist the new member id; answer with the old leader id, so
            # that this member does not compute an assignment a Stable group would not distribute.
            try:
                self._running.store.store_group(group.group_id, group.to_stored())
            except StateLogError:
                logger.exception("group.storing_static_member_failed", group=group.group_id)
                member.protocols = old_protocols
                group.replace_static_member(candidate.group_instance_id, member.member_id, old_member_id)
                return JoinResult.failed(ErrorCode.coordinator_not_available)
            return group.join_result(member.member_id, leader=previous_leader, with_members=False)
        waiter: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        member.join_waiter = waiter
        if group.is_state(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._running.rebalancer.prepare_rebalance(group, f"static member {candidate.group_instance_id} rejoined")
        return waiter

    def _complete_sync(self, group: Group, leader_id: str, assignments: Mapping[str, bytes]) -> None:
        """Store the leader's assignment, make the group Stable and answer every parked SyncGroup.

        Steps:

        1. Give members the leader left out an empty assignment.
        2. Persist the generation with its assignment (on failure: answer COORDINATOR_NOT_AVAILABLE and
           rebalance).
        3. Become Stable and answer every parked SyncGroup with the member's assignment.
        """
        # Step 1
        missing = [member_id for member_id in group.members if member_id not in assignments]
        if missing:
            logger.warning(
                "group.empty_assignment_for_members_the_leader_left_out",
                group=group.group_id,
                generation=group.generation_id,
                members=missing,
            )
        for member_id, member in group.members.items():
            member.assignment = assignments.get(member_id, b"")
        # Step 2
        try:
            self._running.store.store_group(group.group_id, group.to_stored())
        except StateLogError:
            logger.exception("group.storing_group_assignment_failed", group=group.group_id)
            self._running.rebalancer.propagate_assignment(group, ErrorCode.coordinator_not_available)
            self._running.rebalancer.prepare_rebalance(group, "storing the assignment failed")
            return
        # Step 3
        group.transition(GroupState.STABLE)
        self._running.rebalancer.propagate_assignment(group, ErrorCode.none)
        logger.info(
            "group.stable",
            group=group.group_id,
            generation=group.generation_id,
            leader=leader_id,
            members=len(group.members),
        )

    def _synced(self, group: Group, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            group.sync_deadline = None

    def _leave(self, group: Group, member_id: str, group_instance_id: str | None) -> ErrorCode:
        if member_id == NO_MEMBER_ID:
            current = group.current_static_member_id(group_instance_id) if group_instance_id else None
            if current is None:
                return ErrorCode.unknown_member_id
            self._running.rebalancer.remove_member(group, group.members[current], "static member removed by LeaveGroup")
            return ErrorCode.none
        if member_id in group.pending_members:
            self._running.rebalancer.remove_pending_member(group, member_id, "pending member left")
            return ErrorCode.none
        error = self._validate_member(group, member_id, group_instance_id, None)
        if error is not None:
            return error
        self._running.rebalancer.remove_member(group, group.members[member_id], "member left the group")
        return ErrorCode.none

    def _validate_member(
        self, group: Group, member_id: str, group_instance_id: str | None, generation_id: int | None
    ) -> ErrorCode | None:
        error = group.validate_member(member_id, group_instance_id, generation_id)
        if error == ErrorCode.fenced_instance_id:
            logger.info(
                "group.fenced_static_member",
                group=group.group_id,
                instance=group_instance_id,
                member=member_id,
                current=group.current_static_member_id(group_instance_id or ""),
            )
        return error
