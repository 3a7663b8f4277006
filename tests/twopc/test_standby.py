"""A hot-standby coordinator (issue 21 item 4): take-over after the active one dies, and the zombie fenced.

Two coordinator processes on one Kafka log, members of the election group (``standby.enabled``);
the participants and the driver know both targets and fail over (the contract's
``CoordinatorClient``). The active one is killed at a crash point (``os._exit(137)``, as ``kill -9``
ends it: no clean leave of the group) in the middle of a commit, or paused (SIGSTOP) and resumed
after the standby took over.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Final

import grpc
import pytest

from onceflow.contract import TransactionId
from onceflow.contract.clients import CoordinatorClient
from onceflow.coordinator.service import EXIT_FENCED
from onceflow.testing.coordinator import CoordinatorProcess
from onceflow.testing.coordinator.cluster import SINKS
from onceflow.testing.faults import CRASH_EXIT_CODE
from onceflow.testing.faults.coordinator import CRASH_ENV

from .conftest import ClusterFactory
from .driver import COMMITTED, JOB, NOTHING_PREPARED, batch_rows, expected_rows

pytestmark = pytest.mark.slow

#: A generous bound on the take-over: the session timeout (6 s here) plus the standby's recovery,
#: on a loaded 2-core machine. It measures the mechanism, not the machine.
TAKEOVER_BOUND_S: Final = 30.0


def _refused_by(standby: CoordinatorProcess, active: str, timeout: float = 15.0) -> str:
    """Wait until ``standby`` answers UNAVAILABLE naming ``active``; returns the answer's details."""
    deadline = time.monotonic() + timeout
    details = ""
    with CoordinatorClient(standby.target, timeout_s=5) as direct:
        while time.monotonic() < deadline:
            with pytest.raises(grpc.RpcError) as refused:
                direct.list_transactions()
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            details = refused.value.details() or ""
            if f"the active coordinator is {active}" in details:
                return details
            time.sleep(0.2)
    raise AssertionError(f"{standby.target} never named {active} as the active coordinator: {details!r}")


def test_kill_9_of_the_active_mid_commit_the_standby_takes_over(cluster_factory: ClusterFactory) -> None:
    """Steps:
    1. Coordinator A is active (crash-hooked at the commit point), B its standby: B reports
       NOT_SERVING and answers UNAVAILABLE naming A.
    2. Batch 0: A logs the COMMIT decision and dies before sending any Commit.
    3. B takes over within the bound: its init_transactions fences A, it recovers from the log and
       re-sends Commit; batch 0 is COMMITTED in every sink.
    4. The writer's retry of batch 0 (same epoch, same client) is answered COMMITTED, by B; batch
       1 commits.
    5. A comes back as B's standby.
    """
    # Step 1
    cluster = cluster_factory(standby=True, coordinator_env={CRASH_ENV: "commit-logged"})
    active, standby = cluster.coordinators
    assert active.serving() and not standby.serving()
    assert "is a standby" in _refused_by(standby, active.target)
    # Step 2
    epoch = cluster.register(JOB)
    files = cluster.stage(JOB, 0, batch_rows(0))
    with pytest.raises(grpc.RpcError):
        cluster.commit(JOB, epoch, 0, files)
    assert active.wait(10) == CRASH_EXIT_CODE
    died = time.monotonic()
    # Step 3
    standby.wait_active(TAKEOVER_BOUND_S)
    took = time.monotonic() - died
    print(f"take-over: {took:.1f}s after the active coordinator died")
    assert took < TAKEOVER_BOUND_S
    cluster.wait_for_state(JOB, 0, COMMITTED)
    assert "recovery.commit txn=ipcount:0" in standby.log_tail(200)
    # Step 4
    assert cluster.commit(JOB, epoch, 0, files).state == COMMITTED
    assert cluster.commit(JOB, epoch, 1, cluster.stage(JOB, 1, batch_rows(1))).state == COMMITTED
    expected = expected_rows([batch_rows(0), batch_rows(1)])
    assert cluster.sink_rows() == {sink: expected for sink in SINKS}
    assert cluster.prepared() == NOTHING_PREPARED
    # Step 5
    del active.env[CRASH_ENV]
    active.start()
    assert "is a standby" in _refused_by(active, standby.target)
    assert not active.serving() and standby.serving()


def test_a_paused_active_is_replaced_and_fenced_when_it_comes_back(cluster_factory: ClusterFactory) -> None:
    """Steps:
    1. Batch 0 commits on the active coordinator A.
    2. A is paused (SIGSTOP: alive but silent, as in a long GC pause or a frozen VM). B takes over
       after the session timeout; its init_transactions fences A's producer.
    3. The driver's next call, still on A, runs out of time; its retry goes to B: batch 1 commits.
    4. A resumes and still believes it is active. Asked about batch 1, which it never saw, it does
       not answer ABORTED (presumed abort from a stale memory): it is fenced first, answers
       UNAVAILABLE (or is already stopping and cancels the call) and exits with the fenced code.
    5. Every sink holds batches 0 and 1 exactly once.
    """
    # Step 1
    cluster = cluster_factory(standby=True)
    zombie, successor = cluster.coordinators
    epoch = cluster.register(JOB)
    assert cluster.commit(JOB, epoch, 0, cluster.stage(JOB, 0, batch_rows(0))).state == COMMITTED
    # Step 2
    assert zombie.pid is not None
    os.kill(zombie.pid, signal.SIGSTOP)
    try:
        successor.wait_active(TAKEOVER_BOUND_S)
        # Step 3
        files = cluster.stage(JOB, 1, batch_rows(1))
        with pytest.raises(grpc.RpcError) as hung:
            cluster.commit(JOB, epoch, 1, files, timeout=2)
        assert hung.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert cluster.commit(JOB, epoch, 1, files).state == COMMITTED
    finally:
        # Step 4
        os.kill(zombie.pid, signal.SIGCONT)
    with CoordinatorClient(zombie.target, timeout_s=20) as direct, pytest.raises(grpc.RpcError) as refused:
        direct.get_transaction(TransactionId(JOB, 1))
    # Either it answers UNAVAILABLE (fenced, about to exit), or its session's loss reached it first and
    # it stopped serving with the call in flight (CANCELLED by the stopping server): never an answer.
    assert refused.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED), refused.value.details()
    assert zombie.wait(30) == EXIT_FENCED
    assert "fenced" in zombie.log_tail(100)
    # Step 5
    assert cluster.transaction(JOB, 1).state == COMMITTED
    expected = expected_rows([batch_rows(0), batch_rows(1)])
    assert cluster.sink_rows() == {sink: expected for sink in SINKS}
    assert cluster.prepared() == NOTHING_PREPARED
