"""``Group``: the membership state of one consumer group, and the invariants that tie it together."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from kio.schema.errors import ErrorCode

from onceflow.broker.groups.member import Member
from onceflow.broker.groups.offsets import GroupOffsets
from onceflow.broker.groups.records import StoredGroup, StoredMember
from onceflow.broker.groups.results import JoinedMember, JoinResult, SyncResult
from onceflow.broker.groups.state import GroupState, check_transition


class Group:
    """One group: state, generation, chosen protocol, leader, members, and its offsets.

    Invariants kept here: the leader (if any) is a member; ``static_members`` maps each
    ``group.instance.id`` to the current member with that id; pending members (issued an id by
    MEMBER_ID_REQUIRED, not joined yet) and pending-sync members are never stale member ids.
    Deadlines are clock times; the rebalance engine sets and acts on them.
    """

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: dict[str, float] = {}
        self.pending_sync: set[str] = set()
        self.offsets = GroupOffsets()
        # Rebalance timers.
        self.join_deadline: float | None = None
        self.initial_delay_ms = 0
        self.initial_delay_remaining_ms: int | None = None
        self.new_member_added = False
        self.sync_deadline: float | None = None

    def is_state(self, *states: GroupState) -> bool:
        """Whether the group is in one of ``states``."""
        return self.state in states

    def transition(self, target: GroupState) -> None:
        """Move to ``target``; raises ``IllegalGroupTransition`` if the state machine forbids it."""
        check_transition(self.group_id, self.state, target)
        self.state = target

    def has(self, member_id: str) -> bool:
        """Whether ``member_id`` is a member."""
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        """Whether ``member_id`` leads the group."""
        return self.leader_id == member_id

    def current_static_member_id(self, group_instance_id: str) -> str | None:
        """The member id currently holding ``group_instance_id``."""
        return self.static_members.get(group_instance_id)

    def validate_member(
        self, member_id: str, group_instance_id: str | None, generation_id: int | None = None
    ) -> ErrorCode | None:
        """Why ``member_id`` (with ``group_instance_id``, in ``generation_id``) may not act, or ``None``.

        In order: a Dead group (COORDINATOR_NOT_AVAILABLE); an instance id held by another member
        (FENCED_INSTANCE_ID) or by none (UNKNOWN_MEMBER_ID); an unknown member (UNKNOWN_MEMBER_ID);
        another generation (ILLEGAL_GENERATION). ``generation_id=None`` skips the generation check.
        """
        if self.is_state(GroupState.DEAD):
            return ErrorCode.coordinator_not_available
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                return ErrorCode.unknown_member_id
            if current != member_id:
                return ErrorCode.fenced_instance_id
        if member_id not in self.members:
            return ErrorCode.unknown_member_id
        if generation_id is not None and generation_id != self.generation_id:
            return ErrorCode.illegal_generation
        return None

    def add(self, member: Member) -> None:
        """Add a member; the first member of a group without protocol type sets it, and leads."""
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        self.pending_members.pop(member.member_id, None)
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        """Remove a member (or a pending member); a new leader is picked if it led."""
        self.pending_members.pop(member_id, None)
        self.pending_sync.discard(member_id)
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, group_instance_id: str, old_member_id: str, new_member_id: str) -> Member:
        """Give the static member ``old_member_id`` the id ``new_member_id``; the old id is fenced.

        Requests the old id had parked are answered FENCED_INSTANCE_ID.
        """
        member = self.members.pop(old_member_id)
        member.answer_join(JoinResult.failed(ErrorCode.fenced_instance_id, old_member_id))
        member.answer_sync(SyncResult.failed(ErrorCode.fenced_instance_id))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[group_instance_id] = new_member_id
        if old_member_id in self.pending_sync:
            self.pending_sync.discard(old_member_id)
            self.pending_sync.add(new_member_id)
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        return member

    def supports_protocols(self, protocol_type: str, protocol_names: Sequence[str]) -> bool:
        """Whether a member with this protocol type and these protocols may join."""
        if self.is_state(GroupState.EMPTY) or not self.members:
            # No member left to agree with: Empty, or (until the join deadline, at most one tick) a
            # rebalance whose last member left while a member id issued by MEMBER_ID_REQUIRED was
            # still pending. (Kafka, counting each protocol's supporters among 0 members, accepts any.)
            return bool(protocol_type) and bool(protocol_names)
        return self.protocol_type == protocol_type and bool(self.candidate_protocols() & set(protocol_names))

    def candidate_protocols(self) -> set[str]:
        """The protocols every member supports."""
        counts = Counter(name for member in self.members.values() for name in set(member.protocol_names))
        return {name for name, count in counts.items() if count == len(self.members)}

    def select_protocol(self) -> str:
        """The protocol the members vote for (each votes its most preferred common protocol)."""
        candidates = self.candidate_protocols()
        votes = Counter(member.vote(candidates) for member in self.members.values())
        # Counter.most_common keeps first-seen order among equal counts: the tie goes to the earliest member.
        return votes.most_common(1)[0][0]

    @property
    def rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout among the members."""
        return max((member.client.rebalance_timeout_ms for member in self.members.values()), default=0)

    def has_all_members_joined(self) -> bool:
        """Whether every member has a JoinGroup parked, and no issued member id is still pending."""
        return not self.pending_members and all(member.awaiting_join for member in self.members.values())

    def not_yet_rejoined(self) -> list[Member]:
        """Members without a parked JoinGroup."""
        return [member for member in self.members.values() if not member.awaiting_join]

    def elect_joined_leader(self) -> bool:
        """Make sure the leader is a member that rejoined; ``False`` if no member rejoined."""
        leader = self.members.get(self.leader_id or "")
        if leader is not None and leader.awaiting_join:
            return True
        joined = next((member for member in self.members.values() if member.awaiting_join), None)
        if joined is None:
            return False
        self.leader_id = joined.member_id
        return True

    def init_next_generation(self) -> None:
        """Bump the generation: CompletingRebalance with a selected protocol, or Empty if no members."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.leader_id = None
            self.transition(GroupState.EMPTY)

    def joined_members(self) -> list[JoinedMember]:
        """The members with their metadata for the selected protocol, as the leader receives them."""
        protocol = self.protocol_name or ""
        return [
            JoinedMember(member.member_id, member.group_instance_id, member.metadata(protocol))
            for member in self.members.values()
        ]

    def join_result(self, member_id: str, *, leader: str | None = None, with_members: bool) -> JoinResult:
        """A successful JoinGroup answer for ``member_id`` in the current generation."""
        return JoinResult(
            error=ErrorCode.none,
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader=(self.leader_id if leader is None else leader) or "",
            member_id=member_id,
            members=self.joined_members() if with_members else [],
        )

    def to_stored(self) -> StoredGroup:
        """The group's current generation as persisted."""
        protocol = self.protocol_name or ""
        return StoredGroup(
            protocol_type=self.protocol_type,
            generation_id=self.generation_id,
            protocol_name=self.protocol_name,
            leader_id=self.leader_id,
            members=[
                StoredMember(
                    member_id=member.member_id,
                    group_instance_id=member.group_instance_id,
                    client=member.client,
                    subscription=member.metadata(protocol),
                    assignment=member.assignment,
                )
                for member in self.members.values()
            ],
        )

    def restore(self, stored: StoredGroup, *, session_deadline_base: float) -> None:
        """Reload a persisted generation: Stable with its members, or Empty.

        Restored members must heartbeat within their session timeout of ``session_deadline_base``.
        """
        self.generation_id = stored.generation_id
        self.protocol_type = stored.protocol_type
        self.protocol_name = stored.protocol_name
        for stored_member in stored.members:
            member = Member(
                member_id=stored_member.member_id,
                group_instance_id=stored_member.group_instance_id,
                client=stored_member.client,
                protocol_type=stored.protocol_type or "",
                protocols=[(stored.protocol_name or "", stored_member.subscription)],
                assignment=stored_member.assignment,
                session_deadline=session_deadline_base + stored_member.client.session_timeout_ms / 1000,
            )
            self.add(member)
        self.leader_id = stored.leader_id if stored.leader_id in self.members else next(iter(self.members), None)
        self.state = GroupState.STABLE if self.members else GroupState.EMPTY
