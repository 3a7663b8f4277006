"""Restarts: a crash after the commit point finishes the commit; state and epochs survive."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.groups import Committer, OffsetAndMetadata, TxnOffsetCommitRequest
from onceflow.broker.statelog import StateLogLocked
from onceflow.broker.transactions import TransactionCoordinator

TXN = "onceflow-src-files-0"
GROUP = "g"
PARTS = [("a", 0), ("a", 1), ("b", 0), ("b", 5)]


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout=10))


async def prepare_commit_then_crash(broker: Any) -> tuple[int, int]:
    """Open a transaction with offsets and end it with a MarkerWriter that dies after one marker."""
    async with broker(fail_after=1) as b:
        init = await b.txn.init_producer_id(TXN, 60_000)
        pid, epoch = init.producer_id, init.producer_epoch
        await b.txn.add_partitions_to_txn(TXN, pid, epoch, PARTS)
        await b.txn.add_offsets_to_txn(TXN, pid, epoch, GROUP)
        offsets = {("in", 0): OffsetAndMetadata(99, 0, None, -1)}
        await b.txn.txn_offset_commit(TXN, TxnOffsetCommitRequest(GROUP, pid, epoch, Committer(), offsets))
        assert await b.txn.end_txn(TXN, pid, epoch, commit=True) is ErrorCode.none
        assert len(b.markers.written) == 1
        assert b.txn.describe_transactions([TXN])[0].state == "PrepareCommit"
    return pid, epoch


def test_restart_after_prepare_commit_completes_every_marker_and_the_offsets(broker: Any) -> None:
    async def scenario() -> None:
        pid, epoch = await prepare_commit_then_crash(broker)

        async with broker() as b:
            # Recovery happened in start(): all markers, all COMMIT, at the transaction's epoch.
            assert b.markers.partitions(commit=True) == set(PARTS)
            assert b.markers.partitions(commit=False) == set()
            assert {(m.producer_id, m.producer_epoch) for m in b.markers.written} == {(pid, epoch)}
            [described] = b.txn.describe_transactions([TXN])
            assert (described.state, described.topics) == ("CompleteCommit", {})
            assert b.groups.fetch_offsets(GROUP, [("in", 0)])[1][("in", 0)].offset == 99
            # The client's retry of EndTxn after the restart is answered NONE.
            assert await b.txn.end_txn(TXN, pid, epoch, commit=True) is ErrorCode.none

    run(scenario)


def test_restart_keeps_producer_and_epoch_so_the_next_init_bumps(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            first = await b.txn.init_producer_id(TXN, 60_000)
        async with broker() as b:
            [described] = b.txn.describe_transactions([TXN])
            assert (described.producer_id, described.producer_epoch) == (first.producer_id, 0)
            second = await b.txn.init_producer_id(TXN, 60_000)
            assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)

    run(scenario)


def test_ongoing_transaction_survives_a_restart_and_can_commit_or_time_out(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            init = await b.txn.init_producer_id(TXN, 1_000)
            pid = init.producer_id
            await b.txn.add_partitions_to_txn(TXN, pid, 0, PARTS[:2])
            start = b.txn.describe_transactions([TXN])[0].start_time_ms
        async with broker() as b:
            [described] = b.txn.describe_transactions([TXN])
            assert (described.state, described.start_time_ms) == ("Ongoing", start)
            assert described.topics == {"a": [0, 1]}
            assert b.markers.written == []  # recovery leaves open transactions alone
            b.clock.advance_ms(1_001)
            assert (await b.txn.sweep()).timed_out == [TXN]
            assert b.markers.partitions(commit=False) == set(PARTS[:2])

    run(scenario)


def test_a_second_coordinator_on_the_same_dir_is_refused(broker: Any, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with broker() as b:
            other = TransactionCoordinator(
                tmp_path / "data", markers=b.markers, groups=b.groups, allocate_producer_id=lambda: 1, fsync=False
            )
            try:
                await other.start()
            except StateLogLocked:
                return
            raise AssertionError("a second coordinator started on the same data dir")

    run(scenario)
