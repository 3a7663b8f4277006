"""Oversized requests fail alone; the coordinator keeps serving every other job (issue 14).

A 1 MB writer id or 10,000 staged files used to make the coordinator's log record too large, so its
log failed and it exited (code 4) for every job. Now the sizes are checked at the edge
(INVALID_ARGUMENT naming the limit) and the coordinator answers the next request as before.

Real broker and coordinator processes; participants are fake sinks behind a real gRPC server.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.coordinator.validation import MAX_ID_BYTES, MAX_REASON_BYTES, MAX_STAGED_FILES
from onceflow.core.grpc import open_channel
from onceflow.proto.v1 import common_pb2, coordinator_pb2, coordinator_pb2_grpc
from onceflow.testing.coordinator import CoordinatorProcess, FakeParticipantServer, staged_files

pytestmark = pytest.mark.slow
Stub = coordinator_pb2_grpc.TransactionCoordinatorStub


@pytest.fixture
def stub(broker: EmbeddedBroker, tmp_path: Path) -> Iterator[tuple[Stub, CoordinatorProcess, FakeParticipantServer]]:
    participants = FakeParticipantServer(["kafka", "sqlite"]).start()
    settings = {
        "kafka": {"bootstrap_servers": broker.bootstrap_servers},
        "transaction_log": {"timeout_ms": 10_000},
        "prepare_timeout_ms": 5000,
        "commit_wait_ms": 5000,
        "log": {"level": "INFO"},
    }
    process = CoordinatorProcess(tmp_path / "coordinator", settings).start()
    channel = open_channel(process.target)
    try:
        yield coordinator_pb2_grpc.TransactionCoordinatorStub(channel), process, participants  # type: ignore[no-untyped-call]
    finally:
        channel.close()
        process.stop()
        participants.stop()


def _register(stub: Stub, participants: FakeParticipantServer, job: str) -> int:
    epoch = int(
        stub.RegisterWriter(coordinator_pb2.RegisterWriterRequest(job=job, writer_id="driver"), timeout=20).epoch
    )
    refs = [coordinator_pb2.ParticipantRef(sink=r.sink, target=r.target) for r in participants.refs]
    request = coordinator_pb2.RegisterParticipantsRequest(job=job, writer_epoch=epoch, participants=refs)
    stub.RegisterParticipants(request, timeout=20)
    return epoch


def _commit(stub: Stub, job: str, epoch: int, batch: int, files: list[common_pb2.StagedFile]) -> int:
    request = coordinator_pb2.CommitTransactionRequest(job=job, writer_epoch=epoch, batch=batch, files=files)
    return int(stub.CommitTransaction(request, timeout=30).state)


def _files(job: str, batch: int, count: int) -> list[common_pb2.StagedFile]:
    return [
        common_pb2.StagedFile(
            uri=f"file:///staging/{job}/{batch}/part-{i}.avro",
            count=1,
            sha256=hashlib.sha256(str(i).encode()).hexdigest(),
        )
        for i in range(count)
    ]


def _assert_invalid(call: Callable[[], object], limit: int) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        call()
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, refused.value.details()
    assert f"limit of {limit}" in (refused.value.details() or "")


def _assert_still_serving(stub: Stub, process: CoordinatorProcess, participants: FakeParticipantServer) -> None:
    assert process.is_running(), process.log_tail()
    epoch = _register(stub, participants, "other")
    files = [common_pb2.StagedFile(uri=f.uri, count=f.count, sha256=f.sha256) for f in staged_files("other", 0)]
    assert _commit(stub, "other", epoch, 0, files) == common_pb2.TRANSACTION_STATE_COMMITTED
    assert process.is_running(), process.log_tail()


def test_a_1mb_writer_id_is_refused_and_the_coordinator_keeps_serving(
    stub: tuple[Stub, CoordinatorProcess, FakeParticipantServer],
) -> None:
    client, process, participants = stub
    request = coordinator_pb2.RegisterWriterRequest(job="ipcount", writer_id="w" * 1_000_000)
    _assert_invalid(lambda: client.RegisterWriter(request, timeout=30), MAX_ID_BYTES)
    _assert_still_serving(client, process, participants)


def test_10000_staged_files_are_refused_and_the_coordinator_keeps_serving(
    stub: tuple[Stub, CoordinatorProcess, FakeParticipantServer],
) -> None:
    client, process, participants = stub
    epoch = _register(client, participants, "ipcount")
    _assert_invalid(lambda: _commit(client, "ipcount", epoch, 0, _files("ipcount", 0, 10_000)), MAX_STAGED_FILES)
    _assert_still_serving(client, process, participants)
    # the limit itself is accepted
    assert _commit(client, "ipcount", epoch, 1, _files("ipcount", 1, MAX_STAGED_FILES)) == (
        common_pb2.TRANSACTION_STATE_COMMITTED
    )


def test_a_huge_abort_reason_is_refused_and_the_coordinator_keeps_serving(
    stub: tuple[Stub, CoordinatorProcess, FakeParticipantServer],
) -> None:
    client, process, participants = stub
    epoch = _register(client, participants, "ipcount")
    request = coordinator_pb2.AbortTransactionRequest(
        job="ipcount", writer_epoch=epoch, batch=0, reason="r" * 2_000_000
    )
    _assert_invalid(lambda: client.AbortTransaction(request, timeout=30), MAX_REASON_BYTES)
    _assert_still_serving(client, process, participants)


def test_a_request_over_the_grpc_limit_is_refused_and_the_coordinator_keeps_serving(
    stub: tuple[Stub, CoordinatorProcess, FakeParticipantServer],
) -> None:
    client, process, participants = stub
    request = coordinator_pb2.RegisterWriterRequest(job="ipcount", writer_id="w" * 5_000_000)
    with pytest.raises(grpc.RpcError) as refused:
        client.RegisterWriter(request, timeout=30)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    _assert_still_serving(client, process, participants)
