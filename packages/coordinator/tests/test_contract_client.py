"""The contract's typed CoordinatorClient against a real in-process coordinator server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from onceflow.contract import (
    ParticipantRef,
    ParticipantVote,
    Resolution,
    TransactionId,
    TransactionOutcome,
    TransactionReport,
    TransactionState,
)
from onceflow.contract.clients import (
    AccessDenied,
    CoordinatorClient,
    RequestRefused,
    ServiceUnavailable,
    WriterFenced,
)
from onceflow.contract.staging import StagedFile
from onceflow.coordinator.log import MemoryTransactionLog
from onceflow.coordinator.service import CoordinatorServer
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.core.settings import TlsSettings
from onceflow.proto.v1 import coordinator_pb2
from onceflow.testing.coordinator import FakeParticipants, staged_files

JOB = "ipcount"


def _server(fakes: FakeParticipants, **server: object) -> CoordinatorServer:
    settings = CoordinatorSettings.model_validate(
        {
            "server": {"port": 0, **server},
            "transaction_log": {"backend": "memory"},
            "prepare_timeout_ms": 1000,
            "commit_wait_ms": 2000,
            "metrics": {"port": 0},
        }
    )
    return CoordinatorServer(settings, log=MemoryTransactionLog(), connector=fakes).start()


@pytest.fixture
def client(fakes: FakeParticipants) -> Iterator[CoordinatorClient]:
    server = _server(fakes)
    try:
        with CoordinatorClient(f"127.0.0.1:{server.port}", timeout_s=10) as client:
            yield client
    finally:
        server.stop(grace=0)


def _register(client: CoordinatorClient, fakes: FakeParticipants) -> int:
    registered = client.register_writer(JOB, "driver")
    assert registered.last_committed_batch == -1
    client.register_participants(JOB, registered.epoch, [ParticipantRef(r.sink, r.target) for r in fakes.refs])
    return int(registered.epoch)


def test_every_coordinator_rpc_through_the_client(client: CoordinatorClient, fakes: FakeParticipants) -> None:
    epoch = _register(client, fakes)
    files = staged_files(JOB, 0)
    before = time.time()
    committed = client.commit_transaction(TransactionId(JOB, 0), epoch, files)
    assert committed == TransactionOutcome(TransactionState.COMMITTED, "")
    txn = client.get_transaction(TransactionId(JOB, 0), timeout_s=5)
    assert isinstance(txn, TransactionReport)
    assert (txn.id, txn.state, txn.writer_epoch, txn.files, txn.reason) == (
        TransactionId(JOB, 0),
        TransactionState.COMMITTED,
        epoch,
        tuple(files),
        "",
    )
    assert txn.rows == sum(f.count for f in files) > 0
    assert before - 1 < txn.started_at <= txn.updated_at < time.time() + 1
    assert txn.votes == (
        ParticipantVote("kafka", prepared=True, acknowledged=True),
        ParticipantVote("sqlite", prepared=True, acknowledged=True),
        ParticipantVote("postgres", prepared=True, acknowledged=True),
    )

    fakes["sqlite"].vote_no = "bad file"
    aborted = client.commit_transaction(TransactionId(JOB, 1), epoch, staged_files(JOB, 1))
    assert aborted == TransactionOutcome(TransactionState.ABORTED, "participant 'sqlite' voted no: bad file")
    again = client.abort_transaction(TransactionId(JOB, 1), epoch, "the batch failed")
    assert again == TransactionOutcome(TransactionState.ABORTED)
    resolved = client.resolve_transaction(TransactionId(JOB, 1), Resolution.ABORT, "operator")
    assert resolved == TransactionOutcome(TransactionState.ABORTED)
    unknown = client.get_transaction(TransactionId(JOB, 77))
    assert (unknown.state, unknown.files, unknown.votes) == (TransactionState.ABORTED, (), ())

    listed = client.list_transactions(JOB, [TransactionState.ABORTED])
    assert [t.id.batch for t in listed] == [1]
    assert [t.id.batch for t in client.list_transactions(JOB, limit=1)] == [1]
    assert client.register_writer(JOB, "driver-2").last_committed_batch == 0
    with pytest.raises(WriterFenced, match="fenced") as fenced:  # driver-2 took the job over
        client.commit_transaction(TransactionId(JOB, 2), epoch, staged_files(JOB, 2))
    assert fenced.value.code() == grpc.StatusCode.FAILED_PRECONDITION and isinstance(fenced.value, grpc.RpcError)

    with pytest.raises(RequestRefused) as refused:
        client.resolve_transaction(TransactionId(JOB, 0), Resolution.ABORT, "operator")
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "cannot be made to abort" in refused.value.details()


def test_bad_arguments_are_refused_with_what_is_wrong(client: CoordinatorClient, fakes: FakeParticipants) -> None:
    with pytest.raises(TypeError, match=r"txn must be a TransactionId, got 'ipcount:0' \(str\)"):
        client.get_transaction("ipcount:0")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="transaction batch must be >= 0, got -1"):
        TransactionId(JOB, -1)
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds, got 0"):
        client.list_transactions(JOB, timeout_s=0)
    with pytest.raises(ValueError, match="target must be HOST:PORT"):
        CoordinatorClient("")
    # what only the coordinator can check comes back as its status, naming the field
    epoch = _register(client, fakes)
    with pytest.raises(RequestRefused) as refused:
        client.commit_transaction(TransactionId(JOB, 0), epoch, [StagedFile("file:///s/part-0", 1, "xyz")])
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "files[0].sha256: must be 64 hex characters, got 'xyz'" in refused.value.details()
    with pytest.raises(RequestRefused) as unknown:
        client.commit_transaction(TransactionId("nojob", 0), 1, staged_files("nojob", 0))
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
    assert "unknown job 'nojob'" in unknown.value.details()


def test_the_client_sends_the_token_of_its_tls_settings(fakes: FakeParticipants, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    server = _server(fakes, auth={"token_file": str(token)})
    target = f"127.0.0.1:{server.port}"
    try:
        with CoordinatorClient(target, TlsSettings(token_file=str(token))) as client:
            assert client.register_writer(JOB, "driver").epoch == 1
        with CoordinatorClient(target) as anonymous:
            assert anonymous.list_transactions(JOB) == []  # read-only: no token needed
            with pytest.raises(AccessDenied) as refused:
                anonymous.register_writer(JOB, "driver")
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        server.stop(grace=0)


def test_a_call_that_gets_no_answer_fails_within_its_deadline() -> None:
    with CoordinatorClient("127.0.0.1:1", timeout_s=0.2) as client, pytest.raises(ServiceUnavailable) as failed:
        client.list_transactions(JOB)
    assert failed.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def test_the_client_fails_over_to_the_coordinator_that_answers(fakes: FakeParticipants) -> None:
    """Several targets: a refused connection and an instance that does not serve (UNAVAILABLE) send
    the call on to the next target; the one that answered is asked first from then on."""
    stopped = _server(fakes)
    stopped.engine.close()  # it still listens, answering UNAVAILABLE
    active = _server(fakes)
    try:
        targets = f"127.0.0.1:1, 127.0.0.1:{stopped.port},127.0.0.1:{active.port}"
        with CoordinatorClient(targets, timeout_s=10) as client:
            assert client.targets == ["127.0.0.1:1", f"127.0.0.1:{stopped.port}", f"127.0.0.1:{active.port}"]
            assert client.register_writer(JOB, "driver").epoch == 1
            assert client.register_writer(JOB, "driver").epoch == 2
            assert client.stub.ListTransactions(coordinator_pb2.ListTransactionsRequest(), timeout=5) is not None
        with (
            CoordinatorClient(f"127.0.0.1:1,127.0.0.1:{stopped.port}") as nobody,
            pytest.raises(ServiceUnavailable) as down,
        ):
            nobody.list_transactions(JOB)
        assert down.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "the coordinator was closed" in (down.value.details() or "")
    finally:
        active.stop(grace=0)
        stopped.stop(grace=0)
    with pytest.raises(ValueError, match=r"must be HOST:PORT\[,HOST:PORT...\]"):
        CoordinatorClient("127.0.0.1:1,,127.0.0.1:2")
