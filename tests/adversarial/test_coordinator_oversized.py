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
from onceflow.contract import TransactionId, TransactionState
from onceflow.contract.clients import CoordinatorClient
from onceflow.contract.staging import StagedFile
from onceflow.coordinator.validation import MAX_ID_BYTES, MAX_REASON_BYTES, MAX_STAGED_FILES
from onceflow.testing.coordinator import CoordinatorProcess, FakeParticipantServer, staged_files

pytestmark = pytest.mark.slow
Coordinator = tuple[CoordinatorClient, CoordinatorProcess, FakeParticipantServer]


@pytest.fixture
def coordinator(broker: EmbeddedBroker, tmp_path: Path) -> Iterator[Coordinator]:
    participants = FakeParticipantServer(["kafka", "sqlite"]).start()
    settings = {
        "kafka": {"bootstrap_servers": broker.bootstrap_servers},
        "transaction_log": {"timeout_ms": 10_000},
        "prepare_timeout_ms": 5000,
        "commit_wait_ms": 5000,
        "log": {"level": "INFO"},
    }
    process = CoordinatorProcess(tmp_path / "coordinator", settings).start()
    client = CoordinatorClient(process.target, timeout_s=30)
    try:
        yield client, process, participants
    finally:
        client.close()
        process.stop()
        participants.stop()


def _register(client: CoordinatorClient, participants: FakeParticipantServer, job: str) -> int:
    epoch = int(client.register_writer(job, "driver", timeout_s=20).epoch)
    client.register_participants(job, epoch, participants.refs, timeout_s=20)
    return epoch


def _commit(client: CoordinatorClient, job: str, epoch: int, batch: int, files: list[StagedFile]) -> TransactionState:
    return client.commit_transaction(TransactionId(job, batch), epoch, files).state


def _files(job: str, batch: int, count: int) -> list[StagedFile]:
    return [
        StagedFile(
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


def _assert_still_serving(
    client: CoordinatorClient, process: CoordinatorProcess, participants: FakeParticipantServer
) -> None:
    assert process.is_running(), process.log_tail()
    epoch = _register(client, participants, "other")
    assert _commit(client, "other", epoch, 0, staged_files("other", 0)) is TransactionState.COMMITTED
    assert process.is_running(), process.log_tail()


def test_a_1mb_writer_id_is_refused_and_the_coordinator_keeps_serving(
    coordinator: Coordinator,
) -> None:
    client, process, participants = coordinator
    _assert_invalid(lambda: client.register_writer("ipcount", "w" * 1_000_000), MAX_ID_BYTES)
    _assert_still_serving(client, process, participants)


def test_10000_staged_files_are_refused_and_the_coordinator_keeps_serving(
    coordinator: Coordinator,
) -> None:
    client, process, participants = coordinator
    epoch = _register(client, participants, "ipcount")
    _assert_invalid(lambda: _commit(client, "ipcount", epoch, 0, _files("ipcount", 0, 10_000)), MAX_STAGED_FILES)
    _assert_still_serving(client, process, participants)
    # the limit itself is accepted
    assert _commit(client, "ipcount", epoch, 1, _files("ipcount", 1, MAX_STAGED_FILES)) is TransactionState.COMMITTED


def test_a_huge_abort_reason_is_refused_and_the_coordinator_keeps_serving(
    coordinator: Coordinator,
) -> None:
    client, process, participants = coordinator
    epoch = _register(client, participants, "ipcount")
    reason = "r" * 2_000_000
    _assert_invalid(lambda: client.abort_transaction(TransactionId("ipcount", 0), epoch, reason), MAX_REASON_BYTES)
    _assert_still_serving(client, process, participants)


def test_a_request_over_the_grpc_limit_is_refused_and_the_coordinator_keeps_serving(
    coordinator: Coordinator,
) -> None:
    client, process, participants = coordinator
    with pytest.raises(grpc.RpcError) as refused:
        client.register_writer("ipcount", "w" * 5_000_000)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    _assert_still_serving(client, process, participants)
