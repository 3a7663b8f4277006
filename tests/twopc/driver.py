"""What the Spark driver does in these tests: stage deterministic rows per batch and commit them."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import grpc

from onceflow.contract import TransactionOutcome, TransactionState
from onceflow.contract.staging import StagedFile
from onceflow.core.avro import IpCount
from onceflow.testing.coordinator.cluster import Row, TwoPhaseCommitCluster, row_of

JOB = "ipcount"
WINDOW_MS = 5_000
#: The first batch's window: three hours ago. The Kafka sink stamps records with window_start, and the
#: broker applies time retention (7 days) like Kafka does: fixed dates in the past would see their
#: segments deleted under the test.
W0 = (int(time.time() * 1000) - 3 * 3_600_000) // WINDOW_MS * WINDOW_MS

#: :meth:`TwoPhaseCommitCluster.prepared` when no sink holds anything prepared.
NOTHING_PREPARED: dict[str, list[str]] = {"sqlite": [], "postgres": [], "kafka": []}
#: :meth:`TwoPhaseCommitCluster.sink_rows` when no sink holds a row.
NO_ROWS: dict[str, list[Row]] = {"kafka": [], "sqlite": [], "postgres": []}

PREPARING = TransactionState.PREPARING
COMMITTING = TransactionState.COMMITTING
COMMITTED = TransactionState.COMMITTED
ABORTING = TransactionState.ABORTING
ABORTED = TransactionState.ABORTED


def batch_rows(batch: int, rows: int = 10, *, first: int = 0) -> list[IpCount]:
    """``rows`` IpCount rows of ``batch``: its own 5-second window, one row per IP.

    Every batch writes its own keys (window_start, ip), so a sink's content is exactly the union of
    its committed batches and a duplicate or a lost batch shows up row for row.
    """
    start = W0 + batch * WINDOW_MS
    return [
        IpCount(
            window_start=start, window_end=start + WINDOW_MS, ip=f"10.0.{i // 250}.{i % 250 + 1}", count=batch + i + 1
        )
        for i in range(first, first + rows)
    ]


def expected_rows(batches: Iterable[list[IpCount]]) -> list[Row]:
    """The sorted rows every sink must hold after committing ``batches`` (each a list of rows)."""
    return sorted(row_of(row) for rows in batches for row in rows)


def commit_until_decided(
    cluster: TwoPhaseCommitCluster, epoch: int, batch: int, files: Sequence[StagedFile], *, timeout: float = 30.0
) -> tuple[TransactionOutcome, int]:
    """Commit ``batch`` as the driver does: retry it on ABORTED or UNAVAILABLE until the coordinator
    answers COMMITTED or COMMITTING. Returns the answer and the number of calls it took.

    (A participant that just restarted may be unreachable for a moment: the coordinator's channel
    to it reconnects with backoff, so the first attempt can abort.)
    """
    deadline = time.monotonic() + timeout
    calls = 0
    while True:
        calls += 1
        try:
            response = cluster.commit(JOB, epoch, batch, files)
            if response.state in (COMMITTED, COMMITTING):
                return response, calls
            last = f"{response.reason}"
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            last = f"{exc.code().name}: {exc.details()}"
        if time.monotonic() > deadline:
            raise AssertionError(f"batch {batch} not committed after {calls} calls in {timeout}s: {last}")
        time.sleep(0.1)


#: The coordinator's crash points reached after every participant acked: the caller is answered
#: COMMITTED at the last ack, so that answer and the crash race.
ANSWERED_BEFORE_THE_CRASH = frozenset({"commit-delivered"})


def commit_into_a_crash(
    cluster: TwoPhaseCommitCluster, epoch: int, batch: int, files: Sequence[StagedFile], point: str
) -> None:
    """Commit ``batch`` on a coordinator armed to die at ``point``: the call fails UNAVAILABLE, except
    at a point of :data:`ANSWERED_BEFORE_THE_CRASH`, where it may be answered COMMITTED first (both
    are right; no other answer is)."""
    try:
        answer = cluster.commit(JOB, epoch, batch, files)
    except grpc.RpcError as crashed:
        assert crashed.code() == grpc.StatusCode.UNAVAILABLE, crashed
    else:
        assert point in ANSWERED_BEFORE_THE_CRASH and answer.state == COMMITTED, (
            f"answered {answer.state.name} before dying at {point}"
        )
