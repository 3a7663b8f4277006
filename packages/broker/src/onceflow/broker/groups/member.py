"""``Member``: one consumer in a group, with the requests it is waiting on."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from onceflow.broker.groups.member_client import MemberClient
from onceflow.broker.groups.results import JoinResult, SyncResult

Protocols = list[tuple[str, bytes]]


@dataclass
class Member:
    """A group member: identity, client (with its timeouts), supported protocols (in preference order)
    and assignment.

    ``join_waiter``/``sync_waiter`` hold the answer of a JoinGroup/SyncGroup the member is parked on.
    ``session_deadline`` is the clock time after which the member is expired, or ``None`` while it is
    not expected to heartbeat (it is parked in a JoinGroup or SyncGroup).
    """

    member_id: str
    group_instance_id: str | None
    client: MemberClient
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    join_waiter: asyncio.Future[JoinResult] | None = field(default=None, repr=False)
    sync_waiter: asyncio.Future[SyncResult] | None = field(default=None, repr=False)
    session_deadline: float | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        """Whether the member has a ``group.instance.id`` (KIP-345 static membership)."""
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        """Whether the member has a JoinGroup parked until the rebalance completes."""
        return self.join_waiter is not None and not self.join_waiter.done()

    @property
    def awaiting_sync(self) -> bool:
        """Whether the member has a SyncGroup parked until the leader's assignment arrives."""
        return self.sync_waiter is not None and not self.sync_waiter.done()

    @property
    def protocol_names(self) -> list[str]:
        """The names of the protocols the member supports, in its preference order."""
        return [name for name, _ in self.protocols]

    def matches(self, protocols: Sequence[tuple[str, bytes]]) -> bool:
        """Whether ``protocols`` are exactly the member's current protocols and metadata."""
        return list(protocols) == self.protocols

    def metadata(self, protocol_name: str) -> bytes:
        """The member's metadata for ``protocol_name`` (empty if it does not support it)."""
        for name, metadata in self.protocols:
            if name == protocol_name:
                return metadata
        return b""

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        for name in self.protocol_names:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def answer_join(self, result: JoinResult) -> bool:
        """Complete a parked JoinGroup with ``result``; ``False`` if none was parked."""
        waiter, self.join_waiter = self.join_waiter, None
        if waiter is None or waiter.done():
            return False
        waiter.set_result(result)
        return True

    def answer_sync(self, result: SyncResult) -> bool:
        """Complete a parked SyncGroup with ``result``; ``False`` if none was parked."""
        waiter, self.sync_waiter = self.sync_waiter, None
        if waiter is None or waiter.done():
            return False
        waiter.set_result(result)
        return True
