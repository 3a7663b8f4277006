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
from onceflow.coordinator.crash import CRASH_ENV, CRASH_EXIT_CODE
from onceflow.coordinator.model import TransactionId
from onceflow.coordinator.service.server import EXIT_FENCED
from onceflow.core.grpc import open_channel
from onceflow.proto.v1 import common_pb2, coordinator_pb2, coordinator_pb2_grpc
from onceflow.testing.coordinator import CoordinatorProcess, FakeParticipantServer, staged_files

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


def _stub(process: CoordinatorProcess) -> tuple[grpc.Channel, coordinator_pb2_grpc.TransactionCoordinatorStub]:
    channel = open_channel(process.target)
    return channel, coordinator_pb2_grpc.TransactionCoordinatorStub(channel)  # type: ignore[no-untyped-call]


def _register(stub: coordinator_pb2_grpc.TransactionCoordinatorStub, participants: FakeParticipantServer) -> int:
    epoch = int(
        stub.RegisterWriter(coordinator_pb2.RegisterWriterRequest(job=JOB, writer_id="driver"), timeout=20).epoch
    )
    refs = [coordinator_pb2.ParticipantRef(sink=r.sink, target=r.target) for r in participants.refs]
    stub.RegisterParticipants(
        coordinator_pb2.RegisterParticipantsRequest(job=JOB, writer_epoch=epoch, participants=refs), timeout=20
    )
    return epoch


def _commit(stub: coordinator_pb2_grpc.TransactionCoordinatorStub, epoch: int) -> int:
    files = [common_pb2.StagedFile(uri=f.uri, count=f.count, sha256=f.sha256) for f in staged_files(JOB, 0)]
    request = coordinator_pb2.CommitTransactionRequest(job=JOB, writer_epoch=epoch, batch=0, files=files)
    return int(stub.CommitTransaction(request, timeout=30).state)


def _state(stub: coordinator_pb2_grpc.TransactionCoordinatorStub) -> int:
    return int(
        stub.GetTransaction(coordinator_pb2.GetTransactionRequest(job=JOB, batch=0), timeout=10).transaction.state
    )


def test_kill_after_the_commit_point_then_the_restarted_coordinator_commits(
    broker: EmbeddedBroker, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    process = CoordinatorProcess(tmp_path / "coordinator", _settings(broker), env={CRASH_ENV: "commit-logged"})
    process.start()
    channel, stub = _stub(process)
    try:
        epoch = _register(stub, participants)
        with pytest.raises(grpc.RpcError) as crashed:
            _commit(stub, epoch)
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
        while _state(stub) != common_pb2.TRANSACTION_STATE_COMMITTED:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # the driver, restarted before its own commit log, re-runs the batch and is told COMMITTED
        assert _commit(stub, epoch) == common_pb2.TRANSACTION_STATE_COMMITTED
        assert "recovery.commit" in process.log_tail(200)
    finally:
        channel.close()
        process.stop()


def test_kill_before_the_decision_is_presumed_abort(
    broker: EmbeddedBroker, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    process = CoordinatorProcess(tmp_path / "coordinator", _settings(broker), env={CRASH_ENV: "votes-collected"})
    process.start()
    channel, stub = _stub(process)
    try:
        epoch = _register(stub, participants)
        with pytest.raises(grpc.RpcError):
            _commit(stub, epoch)
        assert process.wait(10) == CRASH_EXIT_CODE
        del process.env[CRASH_ENV]
        process.start()
        for sink in participants.sinks.values():
            assert sink.wait_for("aborted", TXN, timeout=20), sink.calls
            assert sink.count("commit") == 0
        assert _state(stub) in (common_pb2.TRANSACTION_STATE_ABORTING, common_pb2.TRANSACTION_STATE_ABORTED)
        # the driver retries the batch: a new attempt commits
        assert _commit(stub, epoch) == common_pb2.TRANSACTION_STATE_COMMITTED
    finally:
        channel.close()
        process.stop()


def test_a_second_instance_fences_the_first_which_stops(
    broker: EmbeddedBroker, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    first = CoordinatorProcess(tmp_path / "first", _settings(broker)).start()
    second: CoordinatorProcess | None = None
    channel, stub = _stub(first)
    try:
        epoch = _register(stub, participants)
        second = CoordinatorProcess(tmp_path / "second", _settings(broker)).start()
        assert first.is_running()  # a zombie notices at its next write
        with pytest.raises(grpc.RpcError) as fenced:
            stub.RegisterWriter(coordinator_pb2.RegisterWriterRequest(job=JOB, writer_id="late"), timeout=20)
        assert fenced.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "fenced" in fenced.value.details()
        assert first.wait(10) == EXIT_FENCED
        assert "coordinator.fatal" in first.log_tail(200)

        channel2, stub2 = _stub(second)
        with channel2:
            assert _commit(stub2, epoch) == common_pb2.TRANSACTION_STATE_COMMITTED  # the job was replayed
    finally:
        channel.close()
        first.stop()
        if second is not None:
            second.stop()


def test_a_no_vote_over_grpc_aborts_with_the_participant_reason(
    broker: EmbeddedBroker, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    participants.sinks["sqlite"].vote_no = "checksum mismatch for part-0"
    with CoordinatorProcess(tmp_path / "coordinator", _settings(broker)) as process:
        channel, stub = _stub(process)
        with channel:
            epoch = _register(stub, participants)
            files = [common_pb2.StagedFile(uri=f.uri, count=f.count, sha256=f.sha256) for f in staged_files(JOB, 0)]
            request = coordinator_pb2.CommitTransactionRequest(job=JOB, writer_epoch=epoch, batch=0, files=files)
            response = stub.CommitTransaction(request, timeout=30)
    assert response.state == common_pb2.TRANSACTION_STATE_ABORTED
    assert response.reason == "participant 'sqlite' voted no: checksum mismatch for part-0"
    assert participants.sinks["kafka"].wait_for("aborted", TXN, timeout=5)
