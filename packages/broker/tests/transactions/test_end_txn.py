"""EndTxn: markers to exactly the transaction's partitions, group offsets completed, idempotent retries."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.groups import Committer, OffsetAndMetadata, TxnOffsetCommitRequest

TXN = "onceflow-src-files-0"
GROUP = "spark-ip-count"
PARTS = [("ip_count_source", 0), ("ip_count_source", 2), ("offsets", 1)]


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout=10))


def at(offset: int) -> OffsetAndMetadata:
    return OffsetAndMetadata(offset, 0, None, -1)


async def open_txn_with_offsets(b: Any) -> tuple[int, int]:
    init = await b.txn.init_producer_id(TXN, 60_000)
    assert init.error is ErrorCode.none
    pid, epoch = init.producer_id, init.producer_epoch
    assert await b.txn.add_partitions_to_txn(TXN, pid, epoch, PARTS) == dict.fromkeys(PARTS, ErrorCode.none)
    assert await b.txn.add_offsets_to_txn(TXN, pid, epoch, GROUP) is ErrorCode.none
    staged = await b.txn.txn_offset_commit(
        TXN, TxnOffsetCommitRequest(GROUP, pid, epoch, Committer(), {("in", 0): at(42)})
    )
    assert staged == {("in", 0): ErrorCode.none}
    return pid, epoch


def committed(b: Any, offset: int | None) -> bool:
    _, offsets = b.groups.fetch_offsets(GROUP, [("in", 0)])
    entry = offsets[("in", 0)]
    return (entry.offset if entry is not None else None) == offset


def test_commit_writes_commit_markers_to_exactly_its_partitions_and_commits_offsets(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            pid, epoch = await open_txn_with_offsets(b)
            assert b.markers.written == []
            assert committed(b, None)

            assert await b.txn.end_txn(TXN, pid, epoch, commit=True) is ErrorCode.none

            assert sorted((m.topic, m.partition) for m in b.markers.written) == sorted(PARTS)
            assert all(m.commit and m.producer_id == pid and m.producer_epoch == epoch for m in b.markers.written)
            assert all(m.coordinator_epoch == 0 for m in b.markers.written)
            assert committed(b, 42)
            [described] = b.txn.describe_transactions([TXN])
            assert (described.state, described.topics, described.groups) == ("CompleteCommit", {}, [])

    run(scenario)


def test_abort_writes_abort_markers_and_discards_staged_offsets(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            pid, epoch = await open_txn_with_offsets(b)
            assert await b.txn.end_txn(TXN, pid, epoch, commit=False) is ErrorCode.none
            assert b.markers.partitions(commit=False) == set(PARTS)
            assert b.markers.partitions(commit=True) == set()
            assert committed(b, None)
            assert not b.groups.has_pending_txn_offsets(GROUP, "in", 0)
            assert b.txn.describe_transactions([TXN])[0].state == "CompleteAbort"

    run(scenario)


def test_retry_with_same_outcome_is_none_and_opposite_is_invalid_txn_state(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            pid, epoch = await open_txn_with_offsets(b)
            assert await b.txn.end_txn(TXN, pid, epoch, commit=True) is ErrorCode.none
            assert await b.txn.end_txn(TXN, pid, epoch, commit=True) is ErrorCode.none
            assert await b.txn.end_txn(TXN, pid, epoch, commit=False) is ErrorCode.invalid_txn_state
            assert len(b.markers.written) == len(PARTS)  # the retry wrote nothing

    run(scenario)


def test_end_of_a_transaction_that_was_never_begun_is_invalid_and_writes_nothing(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            init = await b.txn.init_producer_id(TXN, 60_000)
            pid, epoch = init.producer_id, init.producer_epoch
            assert await b.txn.end_txn(TXN, pid, epoch, commit=True) is ErrorCode.invalid_txn_state
            assert await b.txn.end_txn(TXN, pid, epoch, commit=False) is ErrorCode.invalid_txn_state
            assert b.markers.written == []
            assert b.txn.describe_transactions([TXN])[0].state == "Empty"

    run(scenario)


def test_next_transaction_starts_after_completion(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            pid, epoch = await open_txn_with_offsets(b)
            assert await b.txn.end_txn(TXN, pid, epoch, commit=True) is ErrorCode.none
            b.markers.written.clear()
            b.clock.advance_ms(5)
            part = [("ip_count_sink", 3)]
            assert await b.txn.add_partitions_to_txn(TXN, pid, epoch, part) == {part[0]: ErrorCode.none}
            [described] = b.txn.describe_transactions([TXN])
            assert described.state == "Ongoing"
            assert described.topics == {"ip_count_sink": [3]}
            assert described.start_time_ms == int(b.clock.now * 1000)
            assert b.txn.is_partition_in_open_txn(pid, "ip_count_sink", 3)
            assert not b.txn.is_partition_in_open_txn(pid, "ip_count_source", 0)
            assert await b.txn.end_txn(TXN, pid, epoch, commit=False) is ErrorCode.none
            assert b.markers.partitions() == {("ip_count_sink", 3)}
            assert not b.txn.is_partition_in_open_txn(pid, "ip_count_sink", 3)

    run(scenario)


def test_requests_are_checked_against_the_current_producer(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            init = await b.txn.init_producer_id(TXN, 60_000)
            pid, epoch = init.producer_id, init.producer_epoch
            part = [("t", 0)]
            assert await b.txn.add_partitions_to_txn("nobody", pid, epoch, part) == {
                part[0]: ErrorCode.invalid_producer_id_mapping
            }
            assert await b.txn.add_partitions_to_txn(TXN, pid + 1, epoch, part) == {
                part[0]: ErrorCode.invalid_producer_id_mapping
            }
            assert await b.txn.add_partitions_to_txn(TXN, pid, epoch + 1, part) == {part[0]: ErrorCode.producer_fenced}
            assert await b.txn.end_txn("nobody", pid, epoch, commit=True) is ErrorCode.invalid_producer_id_mapping
            assert await b.txn.add_offsets_to_txn("", pid, epoch, GROUP) is ErrorCode.invalid_request
            # TxnOffsetCommit needs AddOffsetsToTxn for the group first.
            staged = await b.txn.txn_offset_commit(
                TXN, TxnOffsetCommitRequest(GROUP, pid, epoch, Committer(), {("in", 0): at(1)})
            )
            assert staged == {("in", 0): ErrorCode.invalid_txn_state}
            assert not b.groups.has_pending_txn_offsets(GROUP, "in", 0)

    run(scenario)


def test_marker_to_a_deleted_partition_is_skipped(broker: Any) -> None:
    async def scenario() -> None:
        async with broker(missing=[PARTS[1]]) as b:
            pid, epoch = await open_txn_with_offsets(b)
            assert await b.txn.end_txn(TXN, pid, epoch, commit=True) is ErrorCode.none
            assert b.markers.partitions(commit=True) == {PARTS[0], PARTS[2]}
            assert b.txn.describe_transactions([TXN])[0].state == "CompleteCommit"

    run(scenario)


def test_failed_marker_write_keeps_the_decision_and_the_timer_finishes_it(broker: Any) -> None:
    async def scenario() -> None:
        async with broker(fail_after=1) as b:
            pid, epoch = await open_txn_with_offsets(b)
            # The commit point is passed: the answer is NONE even though only one marker got out.
            assert await b.txn.end_txn(TXN, pid, epoch, commit=True) is ErrorCode.none
            assert len(b.markers.written) == 1
            assert b.txn.describe_transactions([TXN])[0].state == "PrepareCommit"
            assert committed(b, None)
            # The transaction is still closing: a new one must wait, the other outcome is refused.
            part = [("t", 9)]
            assert await b.txn.add_partitions_to_txn(TXN, pid, epoch, part) == {
                part[0]: ErrorCode.concurrent_transactions
            }
            assert await b.txn.end_txn(TXN, pid, epoch, commit=False) is ErrorCode.invalid_txn_state
            assert await b.txn.end_txn(TXN, pid, epoch, commit=True) is ErrorCode.concurrent_transactions

            b.markers.fail_after = None
            report = await b.txn.sweep()
            assert report.completed == [TXN]
            assert b.markers.partitions(commit=True) == set(PARTS)
            assert b.markers.partitions(commit=False) == set()
            assert committed(b, 42)
            assert b.txn.describe_transactions([TXN])[0].state == "CompleteCommit"
            assert await b.txn.end_txn(TXN, pid, epoch, commit=True) is ErrorCode.none

    run(scenario)
