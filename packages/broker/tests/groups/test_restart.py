"""What survives a restart of the coordinator (a new instance on the same data directory)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.groups import (
    Committer,
    GroupCoordinator,
    JoinRequest,
    JoinResult,
    OffsetAndMetadata,
    SyncRequest,
    TxnOffsetCommitRequest,
)

GROUP = "g"
T0 = ("t", 0)
T1 = ("t", 1)


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout=10))


def at(offset: int) -> OffsetAndMetadata:
    return OffsetAndMetadata(offset, 0, "meta", 1_700_000_000_000)


def join(coordinator: GroupCoordinator, session_ms: int) -> asyncio.Task[JoinResult]:
    return asyncio.ensure_future(
        coordinator.join_group(
            JoinRequest(GROUP, "", None, "consumer", [("range", b"sub")], session_ms, 10_000, "c", "h", False)
        )
    )


async def two_member_group(coordinator: GroupCoordinator, session_ms: int) -> tuple[JoinResult, JoinResult]:
    first, second = await asyncio.gather(join(coordinator, session_ms), join(coordinator, session_ms))
    leader, follower = (first, second) if first.leader == first.member_id else (second, first)
    assignments = {leader.member_id: b"L", follower.member_id: b"F"}
    await asyncio.gather(
        coordinator.sync_group(SyncRequest(GROUP, 1, leader.member_id, None, "consumer", "range", assignments)),
        coordinator.sync_group(SyncRequest(GROUP, 1, follower.member_id, None, "consumer", "range", {})),
    )
    return leader, follower


def test_offsets_survive_restart(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator(fsync=True)
        await coordinator.start()
        coordinator.commit_offsets(GROUP, Committer(), {T0: at(1), T1: at(2)})
        coordinator.commit_offsets(GROUP, Committer(), {T0: at(3)})
        coordinator.commit_offsets("other", Committer(), {T0: at(9)})
        await coordinator.stop()

        restarted = new_coordinator()
        await restarted.start()
        assert restarted.fetch_offsets(GROUP, None) == (ErrorCode.none, {T0: at(3), T1: at(2)})
        assert restarted.fetch_offsets("other", [T0])[1] == {T0: at(9)}
        await restarted.stop()

    run(scenario)


def test_pending_transactional_offsets_stay_pending_across_restart(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        coordinator.commit_offsets(GROUP, Committer(), {T0: at(1)})
        coordinator.stage_txn_offsets(TxnOffsetCommitRequest(GROUP, 7, 2, Committer(), {T0: at(10)}))
        coordinator.stage_txn_offsets(TxnOffsetCommitRequest(GROUP, 8, 0, Committer(), {T1: at(20)}))
        await coordinator.stop()

        restarted = new_coordinator()
        await restarted.start()
        assert restarted.has_pending_txn_offsets(GROUP, "t", 0)
        assert restarted.fetch_offsets(GROUP, [T0], require_stable=True)[0] == ErrorCode.unstable_offset_commit
        assert restarted.fetch_offsets(GROUP, [T0, T1]) == (ErrorCode.none, {T0: at(1), T1: None})
        restarted.complete_txn_offsets(GROUP, 7, commit=True)
        restarted.complete_txn_offsets(GROUP, 8, commit=False)
        await restarted.stop()

        again = new_coordinator()
        await again.start()
        assert not again.has_pending_txn_offsets(GROUP, "t", 0)
        assert not again.has_pending_txn_offsets(GROUP, "t", 1)
        assert again.fetch_offsets(GROUP, [T0, T1], require_stable=True) == (ErrorCode.none, {T0: at(10), T1: None})
        await again.stop()

    run(scenario)


def test_group_returns_in_its_last_stable_generation_and_silent_members_expire(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        leader, follower = await two_member_group(coordinator, session_ms=300)
        await coordinator.stop()

        restarted = new_coordinator()
        await restarted.start()
        description = restarted.describe_group(GROUP)
        assert description.state == "Stable"
        assert {(m.member_id, m.assignment) for m in description.members} == {
            (leader.member_id, b"L"),
            (follower.member_id, b"F"),
        }
        synced = await restarted.sync_group(SyncRequest(GROUP, 1, follower.member_id, None, "consumer", "range", {}))
        assert synced.assignment == b"F"

        # The leader keeps heartbeating; the follower went away with the old broker.
        error = ErrorCode.none
        for _ in range(50):
            await asyncio.sleep(0.03)
            error = restarted.heartbeat(GROUP, 1, leader.member_id, None)
            if error != ErrorCode.none:
                break
        assert error == ErrorCode.rebalance_in_progress
        assert restarted.heartbeat(GROUP, 1, follower.member_id, None) == ErrorCode.unknown_member_id
        rejoined = await restarted.join_group(
            JoinRequest(GROUP, leader.member_id, None, "consumer", [("range", b"sub")], 300, 10_000, "c", "h", False)
        )
        assert rejoined.generation_id == 2 and [m.member_id for m in rejoined.members] == [leader.member_id]
        await restarted.stop()

    run(scenario)


def test_an_emptied_group_restarts_empty_with_its_generation(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        leader, follower = await two_member_group(coordinator, session_ms=10_000)
        coordinator.leave_group(GROUP, [(leader.member_id, None), (follower.member_id, None)])
        await asyncio.sleep(0.05)
        assert coordinator.describe_group(GROUP).state == "Empty"
        await coordinator.stop()

        restarted = new_coordinator()
        await restarted.start()
        assert restarted.describe_group(GROUP).state == "Empty"
        result = await join(restarted, 10_000)
        assert result.generation_id == 3
        await restarted.stop()

    run(scenario)
