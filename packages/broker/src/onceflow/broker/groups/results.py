"""What the group coordinator answers: plain, immutable values with no protocol types in them."""

from __future__ import annotations

from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

NO_GENERATION = -1
NO_MEMBER_ID = ""


@dataclass(frozen=True)
class JoinedMember:
    """A member as the leader sees it in its JoinGroup answer: its metadata for the chosen protocol."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResult:
    """The answer to JoinGroup. ``members`` is filled for the leader only."""

    error: ErrorCode
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str
    member_id: str
    members: list[JoinedMember] = field(default_factory=list)

    @classmethod
    def failed(cls, error: ErrorCode, member_id: str = NO_MEMBER_ID) -> JoinResult:
        """A JoinGroup error answer (no generation, no protocol)."""
        return cls(error, NO_GENERATION, None, None, "", member_id, [])


@dataclass(frozen=True)
class SyncResult:
    """The answer to SyncGroup: this member's assignment in the current generation."""

    error: ErrorCode
    protocol_type: str | None
    protocol_name: str | None
    assignment: bytes

    @classmethod
    def failed(cls, error: ErrorCode) -> SyncResult:
        """A SyncGroup error answer (no protocol, empty assignment)."""
        return cls(error, None, None, b"")


@dataclass(frozen=True)
class OffsetAndMetadata:
    """A committed (or pending transactional) offset of one partition."""

    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp_ms: int


@dataclass(frozen=True)
class GroupListing:
    """One line of ListGroups. ``protocol_type`` is "" for groups that only store offsets."""

    group_id: str
    protocol_type: str
    state: str


@dataclass(frozen=True)
class MemberDescription:
    """A member in DescribeGroups; ``metadata`` and ``assignment`` are empty unless the group is Stable."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupDescription:
    """The answer to DescribeGroups for one group. An unknown group is described as Dead, with no error."""

    error: ErrorCode
    group_id: str
    state: str
    protocol_type: str
    protocol_data: str
    members: list[MemberDescription]
