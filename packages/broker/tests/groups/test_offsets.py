"""Offset commits and fetches, and transactional offsets (KIP-447), through GroupCoordinator."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from onceflow.broker.groups import (
    Committer,
    CoordinatorNotRunning,
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


def at(offset: int, metadata: str | None = None) -> OffsetAndMetadata:
    return OffsetAndMetadata(offset, 3, metadata, 1_700_000_000_000)


async def one_member_group(coordinator: GroupCoordinator) -> JoinResult:
    joined = await coordinator.join_group(
        JoinRequest(GROUP, "", None, "consumer", [("range", b"")], 10_000, 10_000, "c", "h", False)
    )
    synced = await coordinator.sync_group(
        SyncRequest(GROUP, joined.generation_id, joined.member_id, None, "consumer", "range", {joined.member_id: b"a"})
    )
    assert synced.error == ErrorCode.none
    return joined


def test_simple_commit_and_fetch(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        assert coordinator.commit_offsets(GROUP, Committer(), {T0: at(10, "m"), T1: at(20)}) == {
            T0: ErrorCode.none,
            T1: ErrorCode.none,
        }
        assert coordinator.fetch_offsets(GROUP, [T0, ("t", 9)]) == (ErrorCode.none, {T0: at(10, "m"), ("t", 9): None})
        assert coordinator.fetch_offsets(GROUP, None) == (ErrorCode.none, {T0: at(10, "m"), T1: at(20)})
        assert coordinator.fetch_offsets("unknown", [T0]) == (ErrorCode.none, {T0: None})
        assert coordinator.fetch_offsets("unknown", None) == (ErrorCode.none, {})
        assert [(g.group_id, g.protocol_type, g.state) for g in coordinator.list_groups()] == [(GROUP, "", "Empty")]
        await coordinator.stop()

    run(scenario)


def test_commit_timestamp_is_filled_in_and_oversized_metadata_is_refused(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator(offset_metadata_max_bytes=8, wall_clock=lambda: 12.5)
        await coordinator.start()
        results = coordinator.commit_offsets(
            GROUP, Committer(), {T0: OffsetAndMetadata(1, -1, "short", -1), T1: at(2, "far too long")}
        )
        assert results == {T0: ErrorCode.none, T1: ErrorCode.offset_metadata_too_large}
        assert coordinator.fetch_offsets(GROUP, None)[1] == {T0: OffsetAndMetadata(1, -1, "short", 12_500)}
        await coordinator.stop()

    run(scenario)


def test_members_commit_and_simple_commits_are_refused_while_the_group_has_members(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        member = await one_member_group(coordinator)
        assert coordinator.commit_offsets(GROUP, Committer(1, member.member_id), {T0: at(5)}) == {T0: ErrorCode.none}
        assert coordinator.commit_offsets(GROUP, Committer(), {T0: at(6)}) == {T0: ErrorCode.unknown_member_id}
        assert coordinator.fetch_offsets(GROUP, [T0])[1] == {T0: at(5)}

        assert coordinator.delete_group(GROUP) == ErrorCode.non_empty_group
        coordinator.leave_group(GROUP, [(member.member_id, None)])
        await asyncio.sleep(0.05)
        assert coordinator.delete_group(GROUP) == ErrorCode.none
        assert coordinator.fetch_offsets(GROUP, None) == (ErrorCode.none, {})
        assert coordinator.delete_group(GROUP) == ErrorCode.group_id_not_found
        await coordinator.stop()

    run(scenario)


def test_transactional_offsets_are_invisible_until_commit(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        coordinator.commit_offsets(GROUP, Committer(), {T0: at(1)})
        assert coordinator.stage_txn_offsets(
            TxnOffsetCommitRequest(GROUP, 7, 0, Committer(), {T0: at(10), T1: at(11)})
        ) == {
            T0: ErrorCode.none,
            T1: ErrorCode.none,
        }

        assert coordinator.fetch_offsets(GROUP, [T0, T1]) == (ErrorCode.none, {T0: at(1), T1: None})
        assert coordinator.has_pending_txn_offsets(GROUP, "t", 0)
        assert not coordinator.has_pending_txn_offsets(GROUP, "t", 5)
        assert coordinator.fetch_offsets(GROUP, [T0, ("t", 5)], require_stable=True) == (
            ErrorCode.unstable_offset_commit,
            {T0: None, ("t", 5): None},
        )

        coordinator.complete_txn_offsets(GROUP, 7, commit=True)
        coordinator.complete_txn_offsets(GROUP, 7, commit=True)  # a retried marker changes nothing
        assert not coordinator.has_pending_txn_offsets(GROUP, "t", 0)
        assert coordinator.fetch_offsets(GROUP, [T0, T1], require_stable=True) == (
            ErrorCode.none,
            {T0: at(10), T1: at(11)},
        )
        await coordinator.stop()

    run(scenario)


def test_aborted_transactional_offsets_are_discarded(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        coordinator.commit_offsets(GROUP, Committer(), {T0: at(1)})
        coordinator.stage_txn_offsets(TxnOffsetCommitRequest(GROUP, 7, 0, Committer(), {T0: at(10)}))
        coordinator.complete_txn_offsets(GROUP, 7, commit=False)
        assert coordinator.fetch_offsets(GROUP, [T0], require_stable=True) == (ErrorCode.none, {T0: at(1)})
        coordinator.complete_txn_offsets("unknown-group", 7, commit=True)
        await coordinator.stop()

    run(scenario)


def test_a_plain_commit_after_staging_wins_over_the_transaction(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        coordinator.stage_txn_offsets(TxnOffsetCommitRequest(GROUP, 7, 0, Committer(), {T0: at(10), T1: at(11)}))
        coordinator.commit_offsets(GROUP, Committer(), {T0: at(50)})
        coordinator.complete_txn_offsets(GROUP, 7, commit=True)
        assert coordinator.fetch_offsets(GROUP, [T0, T1])[1] == {T0: at(50), T1: at(11)}
        await coordinator.stop()

    run(scenario)


def test_transactional_commits_check_the_member_when_given(new_coordinator: Any) -> None:
    async def scenario() -> None:
        coordinator = new_coordinator()
        await coordinator.start()
        member = await one_member_group(coordinator)
        stale = coordinator.stage_txn_offsets(
            TxnOffsetCommitRequest(GROUP, 7, 0, Committer(0, member.member_id), {T0: at(1)})
        )
        assert stale == {T0: ErrorCode.illegal_generation}
        unknown = coordinator.stage_txn_offsets(
            TxnOffsetCommitRequest(GROUP, 7, 0, Committer(1, "stranger"), {T0: at(1)})
        )
        assert unknown == {T0: ErrorCode.unknown_member_id}
        current = coordinator.stage_txn_offsets(
            TxnOffsetCommitRequest(GROUP, 7, 0, Committer(1, member.member_id), {T0: at(1)})
        )
        assert current == {T0: ErrorCode.none}
        # Without member and generation (the pre-KIP-447 form), staging is allowed in a non-empty group.
        assert coordinator.stage_txn_offsets(TxnOffsetCommitRequest(GROUP, 8, 0, Committer(), {T1: at(2)})) == {
            T1: ErrorCode.none
        }
        await coordinator.stop()

    run(scenario)


def test_transaction_calls_before_start_raise(new_coordinator: Any) -> None:
    coordinator = new_coordinator()
    with pytest.raises(CoordinatorNotRunning):
        coordinator.complete_txn_offsets(GROUP, 7, commit=True)
