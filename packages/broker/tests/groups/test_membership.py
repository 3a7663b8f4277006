"""The classic group membership protocol, driven through GroupCoordinator's public methods."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.groups import (
    Committer,
    GroupCoordinator,
    JoinRequest,
    JoinResult,
    OffsetAndMetadata,
    SyncRequest,
    SyncResult,
)

GROUP = "g"
CONSUMER = [("range", b"sub")]
SESSION_MS = 10_000
REBALANCE_MS = 10_000


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout=10))


def join(
    coordinator: GroupCoordinator,
    member_id: str = "",
    *,
    instance: str | None = None,
    protocols: Sequence[tuple[str, bytes]] = CONSUMER,
    session_ms: int = SESSION_MS,
    rebalance_ms: int = REBALANCE_MS,
    client_id: str = "client",
    require_known_member_id: bool = False,
    group: str = GROUP,
) -> asyncio.Task[JoinResult]:
    return asyncio.ensure_future(
        coordinator.join_group(
            JoinRequest(
                group,
                member_id,
                instance,
                "consumer",
                protocols,
                session_ms,
                rebalance_ms,
                client_id,
                "/127.0.0.1",
                require_known_member_id,
            )
        )
    )


def sync(
    coordinator: GroupCoordinator,
    result: JoinResult,
    assignments: dict[str, bytes] | None = None,
    instance: str | None = None,
) -> asyncio.Task[SyncResult]:
    return asyncio.ensure_future(
        coordinator.sync_group(
            SyncRequest(
                GROUP,
                result.generation_id,
                result.member_id,
                instance,
                "consumer",
                result.protocol_name,
                assignments or {},
            )
        )
    )


async def stable_group(coordinator: GroupCoordinator, count: int, **join_args: Any) -> list[JoinResult]:
    """Join ``count`` members together and sync them; returns the join results (leader first)."""
    results = await asyncio.gather(*(join(coordinator, **join_args) for _ in range(count)))
    leader = next(r for r in results if r.leader == r.member_id)
    followers = [r for r in results if r is not leader]
    assignments = {r.member_id: r.member_id.encode() for r in results}
    synced = await asyncio.gather(sync(coordinator, leader, assignments), *(sync(coordinator, r) for r in followers))
    assert all(s.error == ErrorCode.none for s in synced)
    return [leader, *followers]


async def rejoin_all(coordinator: GroupCoordinator, results: Sequence[JoinResult]) -> list[JoinResult]:
    return list(await asyncio.gather(*(join(coordinator, r.member_id) for r in results)))


def test_two_members_join_one_generation_and_sync_distributes_assignments(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        first, second = await asyncio.gather(join(coordinator), join(coordinator))

        assert first.error == second.error == ErrorCode.none
        assert first.generation_id == second.generation_id == 1
        assert first.leader == second.leader
        assert first.protocol_type == "consumer" and first.protocol_name == "range"
        leader, follower = (first, second) if first.leader == first.member_id else (second, first)
        assert {m.member_id for m in leader.members} == {first.member_id, second.member_id}
        assert all(m.metadata == b"sub" for m in leader.members)
        assert follower.members == []

        follower_sync = sync(coordinator, follower)
        await asyncio.sleep(0.02)
        assert not follower_sync.done(), "a follower's SyncGroup waits for the leader's assignment"
        leader_sync = await sync(
            coordinator, leader, {leader.member_id: b"to-leader", follower.member_id: b"to-follower"}
        )
        assert leader_sync == SyncResult(ErrorCode.none, "consumer", "range", b"to-leader")
        assert (await follower_sync).assignment == b"to-follower"

        assert coordinator.heartbeat(GROUP, 1, follower.member_id, None) == ErrorCode.none
        description = coordinator.describe_group(GROUP)
        assert description.state == "Stable" and description.protocol_data == "range"
        assert {m.assignment for m in description.members} == {b"to-leader", b"to-follower"}
        assert [(g.group_id, g.protocol_type, g.state) for g in coordinator.list_groups()] == [
            (GROUP, "consumer", "Stable")
        ]
        assert coordinator.list_groups(["empty"]) == []
        await coordinator.stop()

    run(scenario)


def test_a_third_member_triggers_a_rebalance_and_a_new_generation(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        old = await stable_group(coordinator, 2)

        third = join(coordinator)
        await asyncio.sleep(0.01)
        assert coordinator.describe_group(GROUP).state == "PreparingRebalance"
        for member in old:
            assert coordinator.heartbeat(GROUP, 1, member.member_id, None) == ErrorCode.rebalance_in_progress
        rejoined = await rejoin_all(coordinator, old)
        new = await third

        assert {r.generation_id for r in [*rejoined, new]} == {2}
        leader = next(r for r in [*rejoined, new] if r.member_id == r.leader)
        assert len(leader.members) == 3
        assert coordinator.heartbeat(GROUP, 1, old[0].member_id, None) == ErrorCode.illegal_generation
        await coordinator.stop()

    run(scenario)


def test_a_leaving_member_triggers_a_rebalance_without_it(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        leader, follower = await stable_group(coordinator, 2)

        error, members = coordinator.leave_group(GROUP, [(follower.member_id, None), ("nobody", None)])
        assert error == ErrorCode.none
        assert members == [(follower.member_id, None, ErrorCode.none), ("nobody", None, ErrorCode.unknown_member_id)]
        assert coordinator.heartbeat(GROUP, 1, leader.member_id, None) == ErrorCode.rebalance_in_progress

        (rejoined,) = await rejoin_all(coordinator, [leader])
        assert rejoined.generation_id == 2
        assert [m.member_id for m in rejoined.members] == [leader.member_id]

        coordinator.leave_group(GROUP, [(leader.member_id, None)])
        assert coordinator.describe_group(GROUP).state == "Empty"
        await coordinator.stop()

    run(scenario)


def test_a_group_whose_last_member_leaves_is_empty_at_once_and_accepts_any_protocol(new_coordinator: Any) -> None:
    """As Kafka's prepareRebalance (tryCompleteElseWatch): a rebalance with no member left completes
    at once, so the group is Empty without waiting for a timer tick. A JoinGroup in that window used to
    meet a PreparingRebalance group with no members (INCONSISTENT_GROUP_PROTOCOL for new protocols)."""

    async def scenario() -> None:
        # The timer never ticks during this test: nothing here may depend on it.
        coordinator = new_coordinator(timer_tick_ms=600_000, group_initial_rebalance_delay_ms=0)
        await coordinator.start()
        (only,) = await stable_group(coordinator, 1)

        error, members = coordinator.leave_group(GROUP, [(only.member_id, None)])
        assert error == ErrorCode.none and members == [(only.member_id, None, ErrorCode.none)]
        assert coordinator.describe_group(GROUP).state == "Empty"

        joined = await join(coordinator, protocols=[("roundrobin", b"other")])
        assert joined.error == ErrorCode.none
        assert joined.generation_id == only.generation_id + 2  # the empty generation, then this one
        assert joined.protocol_name == "roundrobin"
        await coordinator.stop()

    run(scenario)


def test_a_group_whose_last_member_expires_is_empty_in_the_same_tick(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator(timer_tick_ms=600_000, group_initial_rebalance_delay_ms=0)
        await coordinator.start()
        await stable_group(coordinator, 1, session_ms=10)
        await asyncio.sleep(0.02)

        coordinator.expire_deadlines()
        assert coordinator.describe_group(GROUP).state == "Empty"
        await coordinator.stop()

    run(scenario)


def test_session_expiry_removes_the_silent_member_and_rebalances(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        alive, silent = await stable_group(coordinator, 2, session_ms=200)

        error = ErrorCode.none
        for _ in range(60):
            await asyncio.sleep(0.02)
            error = coordinator.heartbeat(GROUP, 1, alive.member_id, None)
            if error != ErrorCode.none:
                break
        assert error == ErrorCode.rebalance_in_progress
        assert [m.member_id for m in coordinator.describe_group(GROUP).members] == [alive.member_id]

        (rejoined,) = await rejoin_all(coordinator, [alive])
        assert rejoined.generation_id == 2 and len(rejoined.members) == 1
        assert coordinator.heartbeat(GROUP, 2, silent.member_id, None) == ErrorCode.unknown_member_id
        await coordinator.stop()

    run(scenario)


def test_a_member_that_does_not_rejoin_in_time_is_dropped_from_the_rebalance(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        first, second = await stable_group(coordinator, 2, rebalance_ms=300)

        started = time.monotonic()
        newcomer = join(coordinator, rebalance_ms=300)
        (first_again,) = await rejoin_all(coordinator, [first])
        elapsed = time.monotonic() - started

        assert 0.25 < elapsed < 2
        assert first_again.generation_id == 2
        assert (await newcomer).generation_id == 2
        members = {m.member_id for m in coordinator.describe_group(GROUP).members}
        assert second.member_id not in members and first.member_id in members
        await coordinator.stop()

    run(scenario)


def test_member_id_required_then_join_with_the_issued_id(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        first = await join(coordinator, client_id="app", require_known_member_id=True)
        assert first.error == ErrorCode.member_id_required
        assert first.member_id.startswith("app-")
        assert first.generation_id == -1

        joined = await join(coordinator, first.member_id, client_id="app", require_known_member_id=True)
        assert joined.error == ErrorCode.none
        assert joined.member_id == first.member_id == joined.leader

        unknown = await join(coordinator, "app-made-up", require_known_member_id=True)
        assert unknown.error == ErrorCode.unknown_member_id
        await coordinator.stop()

    run(scenario)


def test_stale_generation_and_unknown_member_are_rejected(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        (member,) = await stable_group(coordinator, 1)
        offsets = {("t", 0): OffsetAndMetadata(5, -1, None, -1)}

        assert coordinator.heartbeat(GROUP, 0, member.member_id, None) == ErrorCode.illegal_generation
        assert (await sync(coordinator, JoinResult(ErrorCode.none, 7, None, None, "", member.member_id))).error == (
            ErrorCode.illegal_generation
        )
        assert coordinator.commit_offsets(GROUP, Committer(0, member.member_id), offsets) == {
            ("t", 0): ErrorCode.illegal_generation
        }
        assert coordinator.heartbeat(GROUP, 1, "stranger", None) == ErrorCode.unknown_member_id
        assert coordinator.heartbeat("other", 1, member.member_id, None) == ErrorCode.unknown_member_id
        assert coordinator.commit_offsets("other", Committer(1, member.member_id), offsets) == {
            ("t", 0): ErrorCode.illegal_generation
        }
        assert coordinator.commit_offsets(GROUP, Committer(1, member.member_id), offsets) == {("t", 0): ErrorCode.none}
        await coordinator.stop()

    run(scenario)


def test_commit_during_completing_rebalance_is_refused(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        (joined,) = await asyncio.gather(join(coordinator))
        assert coordinator.describe_group(GROUP).state == "CompletingRebalance"
        offsets = {("t", 0): OffsetAndMetadata(1, -1, None, -1)}
        assert coordinator.commit_offsets(GROUP, Committer(1, joined.member_id), offsets) == {
            ("t", 0): ErrorCode.rebalance_in_progress
        }
        assert coordinator.heartbeat(GROUP, 1, joined.member_id, None) == ErrorCode.none
        await coordinator.stop()

    run(scenario)


def test_protocol_selection_and_inconsistent_protocols(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        first, second = await asyncio.gather(
            join(coordinator, protocols=[("range", b"r"), ("roundrobin", b"rr")]),
            join(coordinator, protocols=[("sticky", b"s"), ("roundrobin", b"rr")]),
        )
        assert first.protocol_name == second.protocol_name == "roundrobin"
        leader = first if first.leader == first.member_id else second
        assert {m.metadata for m in leader.members} == {b"rr"}

        mismatch = await join(coordinator, protocols=[("sticky", b"s")])
        assert mismatch.error == ErrorCode.inconsistent_group_protocol
        await coordinator.stop()

    run(scenario)


def test_a_restarted_static_member_takes_over_and_fences_its_old_id(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        static, dynamic = await asyncio.gather(join(coordinator, instance="pod-1"), join(coordinator))
        assert static.member_id.startswith("pod-1-")
        leader = static if static.leader == static.member_id else dynamic
        assignments = {static.member_id: b"pod-1-parts", dynamic.member_id: b"other-parts"}
        await asyncio.gather(
            sync(coordinator, leader, assignments, instance="pod-1" if leader is static else None),
            sync(coordinator, dynamic if leader is static else static, instance=None),
        )

        # pod-1 restarts: it lost its member id but keeps its instance id. No rebalance happens.
        restarted = await join(coordinator, instance="pod-1")
        assert restarted.error == ErrorCode.none
        assert restarted.member_id not in (static.member_id, "")
        assert restarted.generation_id == 1
        assert restarted.leader == leader.member_id and restarted.members == []
        assert coordinator.describe_group(GROUP).state == "Stable"

        assert coordinator.heartbeat(GROUP, 1, static.member_id, "pod-1") == ErrorCode.fenced_instance_id
        assert coordinator.heartbeat(GROUP, 1, restarted.member_id, "pod-1") == ErrorCode.none
        assert coordinator.heartbeat(GROUP, 1, dynamic.member_id, None) == ErrorCode.none
        resynced = await sync(coordinator, restarted, instance="pod-1")
        assert resynced.assignment == b"pod-1-parts"
        assert coordinator.leave_group(GROUP, [("", "pod-1")]) == (ErrorCode.none, [("", "pod-1", ErrorCode.none)])
        assert coordinator.heartbeat(GROUP, 1, dynamic.member_id, None) == ErrorCode.rebalance_in_progress
        await coordinator.stop()

    run(scenario)


def test_initial_rebalance_delay_gathers_members_into_the_first_generation(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator(group_initial_rebalance_delay_ms=200)
        await coordinator.start()
        started = time.monotonic()
        first = join(coordinator)
        await asyncio.sleep(0.1)
        second = join(coordinator)
        results = await asyncio.gather(first, second)
        assert time.monotonic() - started >= 0.2
        assert {r.generation_id for r in results} == {1}
        assert len(next(r for r in results if r.member_id == r.leader).members) == 2
        await coordinator.stop()

    run(scenario)


def test_a_member_that_never_syncs_is_removed(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        first, second = await asyncio.gather(join(coordinator, rebalance_ms=200), join(coordinator, rebalance_ms=200))
        leader = first if first.leader == first.member_id else second
        follower = second if leader is first else first
        await sync(coordinator, leader, {leader.member_id: b"a", follower.member_id: b"b"})
        error = ErrorCode.none
        for _ in range(50):
            await asyncio.sleep(0.02)
            error = coordinator.heartbeat(GROUP, 1, leader.member_id, None)
            if error != ErrorCode.none:
                break
        assert error == ErrorCode.rebalance_in_progress
        assert [m.member_id for m in coordinator.describe_group(GROUP).members] == [leader.member_id]
        assert (await sync(coordinator, follower)).error == ErrorCode.unknown_member_id
        await coordinator.stop()

    run(scenario)


def test_requests_before_start_get_coordinator_not_available(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        assert (await join(coordinator)).error == ErrorCode.coordinator_not_available
        assert coordinator.heartbeat(GROUP, 1, "m", None) == ErrorCode.coordinator_not_available

    run(scenario)
