"""The coordinator as a real process on the Kafka log: kill -9 at the commit point, restart, fencing.

Participants are real gRPC servers (fake sinks in this process); the broker is a real process.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract import TransactionId, TransactionState
from onceflow.contract.clients import CoordinatorClient
from onceflow.coordinator.service import EXIT_FENCED
from onceflow.testing.coordinator import CoordinatorProcess, FakeParticipantServer, staged_files
from onceflow.testing.faults import CRASH_EXIT_CODE
from onceflow.testing.faults.coordinator import CRASH_ENV

JOB = "ipcount"
TXN = TransactionId(JOB, 0)
pytestmark = pytest.mark.slow


@pytest.fixture
def participants() -> Iterator[FakeParticipantServer]:
    server = FakeParticipantServer(["kafka", "sqlite"]).start()
    yield server
    server.stop()


def _settings(broker: EmbeddedBroker) -> dict[str, Any]:
    return {
        "kafka": {"bootstrap_servers": broker.bootstrap_servers},
        "prepare_timeout_ms": 5000,
        "commit_wait_ms": 5000,
        "commit_retry": {"initial_backoff_ms": 50, "max_backoff_ms": 500},
        "log": {"level": "INFO"},
    }


def _client(process: CoordinatorProcess) -> CoordinatorClient:
    return CoordinatorClient(process.target, timeout_s=30)


def _register(client: CoordinatorClient, participants: FakeParticipantServer) -> int:
    epoch = int(client.register_writer(JOB, "driver", timeout_s=20).epoch)
    client.register_participants(JOB, epoch, participants.refs, timeout_s=20)
    return epoch


def _commit(client: CoordinatorClient, epoch: int) -> TransactionState:
    return client.commit_transaction(TXN, epoch, staged_files(JOB, 0)).state


def _state(client: CoordinatorClient) -> TransactionState:
    return client.get_transaction(TXN, timeout_s=10).state


def test_kill_after_the_commit_point_then_the_restarted_coordinator_commits(
    broker: EmbeddedBroker, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    process = CoordinatorProcess(tmp_path / "coordinator", _settings(broker), env={CRASH_ENV: "commit-logged"})
    process.start()
    client = _client(process)
    try:
        epoch = _register(client, participants)
        with pytest.raises(grpc.RpcError) as crashed:
            _commit(client, epoch)
        assert crashed.value.code() == grpc.StatusCode.UNAVAILABLE
        assert process.wait(10) == CRASH_EXIT_CODE
        for sink in participants.sinks.values():
            assert TXN in sink.prepared and sink.count("commit") == 0

        del process.env[CRASH_ENV]
        process.start()  # same port, same log
        for sink in participants.sinks.values():
            assert sink.wait_for("committed", TXN, timeout=20), sink.calls
            assert sink.count("prepare") == 1
        deadline = time.monotonic() + 20
        while _state(client) != TransactionState.COMMITTED:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # the driver, restarted before its own commit log, re-runs the batch and is told COMMITTED
        assert _commit(client, epoch) == TransactionState.COMMITTED
        assert "recovery.commit" in process.log_tail(200)
    finally:
        client.close()
        process.stop()


def test_kill_before_the_decision_is_presumed_abort(
    broker: EmbeddedBroker, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    process = CoordinatorProcess(tmp_path / "coordinator", _settings(broker), env={CRASH_ENV: "votes-collected"})
    process.start()
    client = _client(process)
    try:
        epoch = _register(client, participants)
        with pytest.raises(grpc.RpcError):
            _commit(client, epoch)
        assert process.wait(10) == CRASH_EXIT_CODE
        del process.env[CRASH_ENV]
        process.start()
        for sink in participants.sinks.values():
            assert sink.wait_for("aborted", TXN, timeout=20), sink.calls
            assert sink.count("commit") == 0
        assert _state(client) in (TransactionState.ABORTING, TransactionState.ABORTED)
        # the driver retries the batch: a new attempt commits
        assert _commit(client, epoch) == TransactionState.COMMITTED
    finally:
        client.close()
        process.stop()


def test_a_second_instance_fences_the_first_which_stops(
    broker: EmbeddedBroker, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    first = CoordinatorProcess(tmp_path / "first", _settings(broker)).start()
    second: CoordinatorProcess | None = None
    client = _client(first)
    try:
        epoch = _register(client, participants)
        second = CoordinatorProcess(tmp_path / "second", _settings(broker)).start()
        assert first.is_running()  # a zombie notices at its next write
        with pytest.raises(grpc.RpcError) as fenced:
            client.register_writer(JOB, "late", timeout_s=20)
        assert fenced.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "fenced" in fenced.value.details()
        assert first.wait(10) == EXIT_FENCED
        assert "coordinator.fatal" in first.log_tail(200)

        with _client(second) as second_client:
            assert _commit(second_client, epoch) == TransactionState.COMMITTED  # the job was replayed
    finally:
        client.close()
        first.stop()
        if second is not None:
            second.stop()


def test_a_no_vote_over_grpc_aborts_with_the_participant_reason(
    broker: EmbeddedBroker, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    participants.sinks["sqlite"].vote_no = "checksum mismatch for part-0"
    with CoordinatorProcess(tmp_path / "coordinator", _settings(broker)) as process, _client(process) as client:
        epoch = _register(client, participants)
        response = client.commit_transaction(TXN, epoch, staged_files(JOB, 0))
    assert response.state == TransactionState.ABORTED
    assert response.reason == "participant 'sqlite' voted no: checksum mismatch for part-0"
    assert participants.sinks["kafka"].wait_for("aborted", TXN, timeout=5)
