"""InitProducerId: ids and epochs, fencing a predecessor, timeout limits, KIP-360 bumps, epoch overflow."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.errors import ErrorCode

from onceflow.broker.groups import Committer, OffsetAndMetadata, TxnOffsetCommitRequest

TXN = "onceflow-src-files-0"
GROUP = "g"
PARTS = [("ip_count_source", 0), ("ip_count_source", 1)]


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout=10))


def test_new_id_gets_a_fresh_producer_id_at_epoch_zero_and_reinit_bumps(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            first = await b.txn.init_producer_id(TXN, 60_000)
            other = await b.txn.init_producer_id("another", 60_000)
            assert (first.error, first.producer_epoch) == (ErrorCode.none, 0)
            assert other.producer_id != first.producer_id
            second = await b.txn.init_producer_id(TXN, 60_000)
            assert (second.error, second.producer_id, second.producer_epoch) == (
                ErrorCode.none,
                first.producer_id,
                1,
            )
            # The older instance is fenced.
            assert await b.txn.end_txn(TXN, first.producer_id, 0, commit=True) is ErrorCode.producer_fenced

    run(scenario)


def test_init_while_ongoing_aborts_the_predecessor_and_fences_it(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            old = await b.txn.init_producer_id(TXN, 60_000)
            pid = old.producer_id
            await b.txn.add_partitions_to_txn(TXN, pid, 0, PARTS)
            await b.txn.add_offsets_to_txn(TXN, pid, 0, GROUP)
            offsets = {("in", 0): OffsetAndMetadata(7, 0, None, -1)}
            await b.txn.txn_offset_commit(TXN, TxnOffsetCommitRequest(GROUP, pid, 0, Committer(), offsets))

            new = await b.txn.init_producer_id(TXN, 60_000)

            assert new.error is ErrorCode.none
            assert new.producer_id == pid
            assert new.producer_epoch > 1
            # ABORT markers to every partition of the open transaction, at a bumped (fencing) epoch.
            assert b.markers.partitions(commit=False) == set(PARTS)
            assert b.markers.partitions(commit=True) == set()
            assert {m.producer_epoch for m in b.markers.written} == {1}
            assert not b.groups.has_pending_txn_offsets(GROUP, "in", 0)
            assert b.groups.fetch_offsets(GROUP, [("in", 0)])[1] == {("in", 0): None}
            # The predecessor is fenced on every call.
            assert await b.txn.add_partitions_to_txn(TXN, pid, 0, PARTS) == dict.fromkeys(
                PARTS, ErrorCode.producer_fenced
            )
            assert await b.txn.end_txn(TXN, pid, 0, commit=True) is ErrorCode.producer_fenced
            assert await b.txn.add_offsets_to_txn(TXN, pid, 0, GROUP) is ErrorCode.producer_fenced
            # ... and cannot come back through KIP-360 either.
            retry = await b.txn.init_producer_id(TXN, 60_000, pid, 0)
            assert retry.error is ErrorCode.producer_fenced
            # The new instance works.
            assert await b.txn.add_partitions_to_txn(TXN, pid, new.producer_epoch, PARTS[:1]) == {
                PARTS[0]: ErrorCode.none
            }

    run(scenario)


def test_timeout_must_be_positive_and_within_the_maximum(broker: Any) -> None:
    async def scenario() -> None:
        async with broker(transaction_max_timeout_ms=60_000) as b:
            for bad in (0, -5, 60_001):
                result = await b.txn.init_producer_id(TXN, bad)
                assert (result.error, result.producer_id, result.producer_epoch) == (
                    ErrorCode.invalid_transaction_timeout,
                    -1,
                    -1,
                )
            assert (await b.txn.init_producer_id(TXN, 60_000)).error is ErrorCode.none
            assert (await b.txn.init_producer_id("", 1000)).error is ErrorCode.invalid_request
            assert [listing.transactional_id for listing in b.txn.list_transactions()] == [TXN]
            assert [d.timeout_ms for d in b.txn.describe_transactions([TXN])] == [60_000]

    run(scenario)


def test_kip360_bump_with_current_pair_and_retry_of_a_lost_answer(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            first = await b.txn.init_producer_id(TXN, 60_000)
            pid = first.producer_id
            bumped = await b.txn.init_producer_id(TXN, 60_000, pid, 0)
            assert (bumped.error, bumped.producer_id, bumped.producer_epoch) == (ErrorCode.none, pid, 1)
            # The answer was lost and the client asks again with the same pair: same answer, no new bump.
            again = await b.txn.init_producer_id(TXN, 60_000, pid, 0)
            assert (again.error, again.producer_id, again.producer_epoch) == (ErrorCode.none, pid, 1)
            # Mismatches are fenced.
            assert (await b.txn.init_producer_id(TXN, 60_000, pid + 1, 1)).error is ErrorCode.producer_fenced
            assert (await b.txn.init_producer_id(TXN, 60_000, pid, 5)).error is ErrorCode.producer_fenced
            # Only one of the pair is an invalid request.
            assert (await b.txn.init_producer_id(TXN, 60_000, pid, -1)).error is ErrorCode.invalid_request
            # A new instance (no pair) takes over, and the old pair can no longer bump.
            taken = await b.txn.init_producer_id(TXN, 60_000)
            assert taken.producer_epoch == 2
            assert (await b.txn.init_producer_id(TXN, 60_000, pid, 1)).error is ErrorCode.producer_fenced

    run(scenario)


def test_kip360_bump_by_the_owner_aborts_its_own_open_transaction(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            first = await b.txn.init_producer_id(TXN, 60_000)
            pid = first.producer_id
            await b.txn.add_partitions_to_txn(TXN, pid, 0, PARTS)
            bumped = await b.txn.init_producer_id(TXN, 60_000, pid, 0)
            assert bumped.error is ErrorCode.none
            assert bumped.producer_epoch > 0
            assert b.markers.partitions(commit=False) == set(PARTS)
            assert b.txn.describe_transactions([TXN])[0].state == "Empty"

    run(scenario)


def test_unknown_id_with_a_kip360_pair_gets_a_new_producer(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            result = await b.txn.init_producer_id(TXN, 60_000, 77, 3)
            assert result.error is ErrorCode.none
            assert result.producer_id != 77
            assert result.producer_epoch == 0

    run(scenario)


def test_epoch_overflow_rotates_to_a_new_producer_id(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            first = await b.txn.init_producer_id(TXN, 60_000)
            pid = first.producer_id
            epoch = 0
            while epoch < 32766:
                result = await b.txn.init_producer_id(TXN, 60_000, pid, epoch)
                assert result.error is ErrorCode.none
                assert result.producer_id == pid
                epoch = result.producer_epoch
            assert epoch == 32766
            rotated = await b.txn.init_producer_id(TXN, 60_000, pid, epoch)
            assert rotated.error is ErrorCode.none
            assert rotated.producer_id != pid
            assert rotated.producer_epoch == 0
            # A retry of the rotation (lost answer) gets the same new pair.
            retry = await b.txn.init_producer_id(TXN, 60_000, pid, epoch)
            assert (retry.error, retry.producer_id, retry.producer_epoch) == (ErrorCode.none, rotated.producer_id, 0)

    run(scenario)


def test_fencing_an_open_transaction_at_the_last_epoch_rotates_the_producer_id(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            pid = (await b.txn.init_producer_id(TXN, 60_000)).producer_id
            epoch = 0
            while epoch < 32766:
                epoch = (await b.txn.init_producer_id(TXN, 60_000, pid, epoch)).producer_epoch
            await b.txn.add_partitions_to_txn(TXN, pid, epoch, PARTS)
            new = await b.txn.init_producer_id(TXN, 60_000)
            assert new.error is ErrorCode.none
            assert (new.producer_id != pid, new.producer_epoch) == (True, 0)
            assert {(m.producer_id, m.producer_epoch, m.commit) for m in b.markers.written} == {(pid, 32767, False)}
            assert await b.txn.end_txn(TXN, pid, epoch, commit=True) is ErrorCode.invalid_producer_id_mapping

    run(scenario)
