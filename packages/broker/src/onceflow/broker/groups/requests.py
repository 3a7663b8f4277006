"""What the protocol layer asks of the group coordinator, as values: who commits offsets, who joins and syncs,
and which offsets a transaction stages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from onceflow.broker.groups.offsets import TopicPartition
from onceflow.broker.groups.results import NO_MEMBER_ID, OffsetAndMetadata


@dataclass(frozen=True, slots=True)
class Committer:
    """Who commits offsets, as OffsetCommit and TxnOffsetCommit name it: the member's generation, id
    and static instance id. The default is a simple commit (generation -1, no member: an admin tool,
    or a transactional producer that names no member)."""

    generation_id: int = -1
    member_id: str = NO_MEMBER_ID
    group_instance_id: str | None = None

    @property
    def is_member(self) -> bool:
        """Whether the commit names a member (which must then be current), rather than being a simple commit."""
        return self.generation_id >= 0 or self.member_id != NO_MEMBER_ID or self.group_instance_id is not None


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequest:
    """A TxnOffsetCommit request, as the group coordinator sees it: ``offsets`` to stage in ``group_id``,
    pending in the transaction of ``producer_id`` at ``producer_epoch``, by ``committer``."""

    group_id: str
    producer_id: int
    producer_epoch: int
    committer: Committer
    offsets: Mapping[TopicPartition, OffsetAndMetadata]


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A JoinGroup request: the member (``member_id`` empty for a new one), its protocols and timeouts,
    and who sent it (``client_host`` as Kafka writes it: ``/127.0.0.1``). ``require_known_member_id``
    (JoinGroup v4+) makes a new member rejoin with the id it is given (MEMBER_ID_REQUIRED)."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: Sequence[tuple[str, bytes]]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str
    client_host: str
    require_known_member_id: bool
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class SyncRequest:
    """A SyncGroup request: the member of ``generation_id``, the protocol it expects (None before
    SyncGroup v5, which does not send it), and, from the leader, every member's assignment."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: Mapping[str, bytes]
