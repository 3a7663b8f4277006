"""ListTransactions, DescribeTransactions and the operator's abort."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.errors import ErrorCode

PARTS = [("t", 2), ("t", 0), ("u", 1)]


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout=10))


def test_list_and_describe_report_states_partitions_and_start_times(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            idle = await b.txn.init_producer_id("idle", 10_000)
            busy = await b.txn.init_producer_id("busy", 20_000)
            done = await b.txn.init_producer_id("done", 30_000)
            b.clock.advance_ms(100)
            started_ms = int(b.clock.now * 1000)
            await b.txn.add_partitions_to_txn("busy", busy.producer_id, 0, PARTS)
            await b.txn.add_offsets_to_txn("busy", busy.producer_id, 0, "grp")
            await b.txn.add_partitions_to_txn("done", done.producer_id, 0, PARTS[:1])
            await b.txn.end_txn("done", done.producer_id, 0, commit=True)
            b.clock.advance_ms(5_000)

            listing = {(x.transactional_id, x.producer_id, x.state) for x in b.txn.list_transactions()}
            assert listing == {
                ("idle", idle.producer_id, "Empty"),
                ("busy", busy.producer_id, "Ongoing"),
                ("done", done.producer_id, "CompleteCommit"),
            }
            assert [x.transactional_id for x in b.txn.list_transactions(state_filters=["ongoing"])] == ["busy"]
            assert [x.transactional_id for x in b.txn.list_transactions(producer_id_filters=[idle.producer_id])] == [
                "idle"
            ]
            assert {x.transactional_id for x in b.txn.list_transactions(duration_filter_ms=4_000)} == {"busy", "done"}
            assert b.txn.list_transactions(duration_filter_ms=6_000) == []
            assert b.txn.list_transactions(state_filters=["PrepareEpochFence"]) == []

            described = {d.transactional_id: d for d in b.txn.describe_transactions(["busy", "idle", "nope", ""])}
            assert described["busy"].error is ErrorCode.none
            assert described["busy"].state == "Ongoing"
            assert described["busy"].topics == {"t": [0, 2], "u": [1]}
            assert described["busy"].groups == ["grp"]
            assert described["busy"].start_time_ms == started_ms
            assert (described["busy"].timeout_ms, described["busy"].producer_epoch) == (20_000, 0)
            assert (described["idle"].state, described["idle"].start_time_ms) == ("Empty", -1)
            assert described["nope"].error is ErrorCode.transactional_id_not_found
            assert described[""].error is ErrorCode.invalid_request

    run(scenario)


def test_operator_abort_aborts_the_open_transaction_and_fences_its_producer(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            init = await b.txn.init_producer_id("stuck", 60_000)
            pid = init.producer_id
            await b.txn.add_partitions_to_txn("stuck", pid, 0, PARTS)

            assert await b.txn.abort_transaction("stuck") is ErrorCode.none

            assert b.markers.partitions(commit=False) == set(PARTS)
            assert {m.producer_epoch for m in b.markers.written} == {1}
            [described] = b.txn.describe_transactions(["stuck"])
            assert (described.state, described.producer_epoch) == ("CompleteAbort", 1)
            assert await b.txn.end_txn("stuck", pid, 0, commit=True) is ErrorCode.producer_fenced
            assert (await b.txn.init_producer_id("stuck", 60_000, pid, 0)).error is ErrorCode.producer_fenced
            # Nothing left to abort; unknown ids are reported as such.
            assert await b.txn.abort_transaction("stuck") is ErrorCode.invalid_txn_state
            assert await b.txn.abort_transaction("unknown") is ErrorCode.transactional_id_not_found

    run(scenario)


def test_operator_abort_never_aborts_a_decided_commit(broker: Any) -> None:
    async def scenario() -> None:
        async with broker(fail_after=0) as b:
            init = await b.txn.init_producer_id("deciding", 60_000)
            await b.txn.add_partitions_to_txn("deciding", init.producer_id, 0, PARTS)
            assert await b.txn.end_txn("deciding", init.producer_id, 0, commit=True) is ErrorCode.none
            assert b.txn.describe_transactions(["deciding"])[0].state == "PrepareCommit"
            b.markers.fail_after = None

            assert await b.txn.abort_transaction("deciding") is ErrorCode.invalid_txn_state

            assert b.markers.partitions(commit=True) == set(PARTS)
            assert b.markers.partitions(commit=False) == set()
            assert b.txn.describe_transactions(["deciding"])[0].state == "CompleteCommit"

    run(scenario)


def test_stopped_coordinator_answers_coordinator_not_available(broker: Any) -> None:
    async def scenario() -> None:
        async with broker() as b:
            pass
        assert (await b.txn.init_producer_id("x", 1000)).error is ErrorCode.coordinator_not_available
        assert await b.txn.end_txn("x", 1, 0, commit=True) is ErrorCode.coordinator_not_available
        assert await b.txn.add_partitions_to_txn("x", 1, 0, PARTS[:1]) == {
            PARTS[0]: ErrorCode.coordinator_not_available
        }
        assert b.txn.list_transactions() == []
        assert b.txn.describe_transactions(["x"])[0].error is ErrorCode.coordinator_not_available

    run(scenario)
