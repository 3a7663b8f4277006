"""Transaction timeouts (abort with an epoch bump, KIP-588 recovery) and transactional id expiration."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.errors import ErrorCode

TXN = "onceflow-src-files-0"
PARTS = [("ip_count_source", 0), ("ip_count_source", 1)]
DAY_MS = 24 * 3600 * 1000


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout=10))


def test_timed_out_transaction_is_aborted_with_a_bumped_epoch(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            init = await b.txn.init_producer_id(TXN, 1_000)
            pid = init.producer_id
            await b.txn.add_partitions_to_txn(TXN, pid, 0, PARTS)
            b.clock.advance_ms(1_000)
            assert (await b.txn.sweep()).timed_out == []  # not older than its timeout yet

            b.clock.advance_ms(1)
            report = await b.txn.sweep()

            assert report.timed_out == [TXN]
            assert b.markers.partitions(commit=False) == set(PARTS)
            assert {(m.producer_id, m.producer_epoch) for m in b.markers.written} == {(pid, 1)}
            [described] = b.txn.describe_transactions([TXN])
            assert (described.state, described.producer_epoch, described.topics) == ("CompleteAbort", 1, {})
            # The timed-out producer is fenced ...
            assert await b.txn.end_txn(TXN, pid, 0, commit=True) is ErrorCode.producer_fenced
            assert await b.txn.add_partitions_to_txn(TXN, pid, 0, PARTS) == dict.fromkeys(
                PARTS, ErrorCode.producer_fenced
            )
            # ... but may re-initialise with its old epoch (KIP-360/KIP-588) and go on.
            again = await b.txn.init_producer_id(TXN, 1_000, pid, 0)
            assert (again.error, again.producer_id) == (ErrorCode.none, pid)
            assert again.producer_epoch >= 1
            assert await b.txn.add_partitions_to_txn(TXN, pid, again.producer_epoch, PARTS) == dict.fromkeys(
                PARTS, ErrorCode.none
            )

    run(scenario)


def test_a_new_instance_after_a_timeout_fences_the_old_one_for_good(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            pid = (await b.txn.init_producer_id(TXN, 1_000)).producer_id
            await b.txn.add_partitions_to_txn(TXN, pid, 0, PARTS)
            b.clock.advance_ms(2_000)
            await b.txn.sweep()
            assert (await b.txn.init_producer_id(TXN, 1_000)).error is ErrorCode.none
            assert (await b.txn.init_producer_id(TXN, 1_000, pid, 0)).error is ErrorCode.producer_fenced

    run(scenario)


def test_background_timer_aborts_timed_out_transactions(broker: Any) -> None:
    async def scenario() -> None:
        async with broker(clock=time.time, abort_timed_out_transactions_interval_ms=20) as b:
            pid = (await b.txn.init_producer_id(TXN, 30)).producer_id
            await b.txn.add_partitions_to_txn(TXN, pid, 0, PARTS)
            for _ in range(200):
                if b.txn.describe_transactions([TXN])[0].state == "CompleteAbort":
                    break
                await asyncio.sleep(0.01)
            assert b.txn.describe_transactions([TXN])[0].state == "CompleteAbort"
            assert b.markers.partitions(commit=False) == set(PARTS)

    run(scenario)


def test_idle_transactional_ids_expire_and_start_afresh(broker: Any) -> None:
    async def scenario() -> None:
        async with broker(transactional_id_expiration_ms=7 * DAY_MS) as b:
            first = await b.txn.init_producer_id(TXN, 60_000)
            busy = await b.txn.init_producer_id("busy", 60_000)
            await b.txn.add_partitions_to_txn("busy", busy.producer_id, 0, PARTS)
            b.clock.advance_ms(7 * DAY_MS)
            report = await b.txn.sweep()
            # The idle id is gone; the open transaction timed out (and is now idle, but freshly updated).
            assert report.expired == [TXN]
            assert report.timed_out == ["busy"]
            assert b.txn.describe_transactions([TXN])[0].error is ErrorCode.transactional_id_not_found
            assert await b.txn.end_txn(TXN, first.producer_id, 0, commit=True) is ErrorCode.invalid_producer_id_mapping
            again = await b.txn.init_producer_id(TXN, 60_000)
            assert (again.error, again.producer_epoch) == (ErrorCode.none, 0)
            assert again.producer_id != first.producer_id

        async with broker(transactional_id_expiration_ms=7 * DAY_MS) as b:
            assert b.txn.describe_transactions([TXN])[0].producer_id == again.producer_id

    run(scenario)
