"""``MemberClient``: the client behind a group member, as its JoinGroup describes it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MemberClient:
    """The client id and host of a member's consumer, and the rebalance and session timeouts it asked
    for; a rejoin replaces them together. The live ``Member`` and its ``StoredMember`` record share it."""

    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
