"""The gRPC boundary: status codes with messages, health, reflection, metrics, and the admin CLI."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from onceflow.cli.app import main as onceflow_main
from onceflow.contract.clients import CoordinatorClient
from onceflow.coordinator.log import MemoryTransactionLog
from onceflow.coordinator.service import CoordinatorServer
from onceflow.coordinator.servicer import SERVICE_NAME
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.proto.v1 import common_pb2, coordinator_pb2, coordinator_pb2_grpc
from onceflow.testing.coordinator import FakeParticipants, staged_files

JOB = "ipcount"
Stub = coordinator_pb2_grpc.TransactionCoordinatorStub


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def server(fakes: FakeParticipants) -> Iterator[CoordinatorServer]:
    settings = CoordinatorSettings.model_validate(
        {
            "server": {"port": 0},
            "transaction_log": {"backend": "memory"},
            "prepare_timeout_ms": 1000,
            "commit_wait_ms": 2000,
            "metrics": {"port": _free_port()},
        }
    )
    instance = CoordinatorServer(settings, log=MemoryTransactionLog(), connector=fakes).start()
    yield instance
    instance.stop(grace=0)


@pytest.fixture
def client(server: CoordinatorServer) -> Iterator[CoordinatorClient]:
    with CoordinatorClient(f"127.0.0.1:{server.port}") as coordinator:
        yield coordinator


@pytest.fixture
def channel(client: CoordinatorClient) -> grpc.Channel:
    return client.channel


@pytest.fixture
def stub(client: CoordinatorClient) -> Stub:
    """The raw stub: these tests send the malformed requests the typed client would not build."""
    return client.stub


def _error(call: object) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()  # type: ignore[operator]
    return info.value


def _register(stub: Stub, fakes: FakeParticipants) -> int:
    epoch = int(stub.RegisterWriter(coordinator_pb2.RegisterWriterRequest(job=JOB, writer_id="t")).epoch)
    refs = [coordinator_pb2.ParticipantRef(sink=r.sink, target=r.target) for r in fakes.refs]
    stub.RegisterParticipants(
        coordinator_pb2.RegisterParticipantsRequest(job=JOB, writer_epoch=epoch, participants=refs)
    )
    return epoch


def _files(batch: int) -> list[common_pb2.StagedFile]:
    return [common_pb2.StagedFile(uri=f.uri, count=f.count, sha256=f.sha256) for f in staged_files(JOB, batch)]


def test_commit_over_grpc(stub: Stub, fakes: FakeParticipants) -> None:
    epoch = _register(stub, fakes)
    request = coordinator_pb2.CommitTransactionRequest(job=JOB, writer_epoch=epoch, batch=0, files=_files(0))
    assert stub.CommitTransaction(request).state == common_pb2.TRANSACTION_STATE_COMMITTED
    txn = stub.GetTransaction(coordinator_pb2.GetTransactionRequest(job=JOB, batch=0)).transaction
    assert (txn.id.job, txn.id.batch, txn.state, len(txn.files)) == (JOB, 0, common_pb2.TRANSACTION_STATE_COMMITTED, 2)
    assert [(v.sink, v.prepared, v.acknowledged) for v in txn.participants] == [
        ("kafka", True, True),
        ("sqlite", True, True),
        ("postgres", True, True),
    ]
    assert txn.started_at.seconds > 0
    fakes["sqlite"].vote_no = "bad file"
    aborted = stub.CommitTransaction(
        coordinator_pb2.CommitTransactionRequest(job=JOB, writer_epoch=epoch, batch=1, files=_files(1))
    )
    assert aborted.state == common_pb2.TRANSACTION_STATE_ABORTED
    assert aborted.reason == "participant 'sqlite' voted no: bad file"
    unknown = stub.GetTransaction(coordinator_pb2.GetTransactionRequest(job=JOB, batch=99)).transaction
    assert unknown.state == common_pb2.TRANSACTION_STATE_ABORTED
    listed = stub.ListTransactions(
        coordinator_pb2.ListTransactionsRequest(job=JOB, states=[common_pb2.TRANSACTION_STATE_ABORTED])
    ).transactions
    assert [t.id.batch for t in listed] == [1]


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (coordinator_pb2.CommitTransactionRequest(job="", writer_epoch=1, batch=0), "job: must not be empty"),
        (coordinator_pb2.CommitTransactionRequest(job=JOB, writer_epoch=1, batch=-3), "batch: must be >= 0, got -3"),
        (coordinator_pb2.CommitTransactionRequest(job=JOB, writer_epoch=0, batch=0), "writer_epoch: must be > 0"),
        (
            coordinator_pb2.CommitTransactionRequest(
                job=JOB, writer_epoch=1, batch=0, files=[common_pb2.StagedFile(uri="", count=1, sha256="a" * 64)]
            ),
            "files[0].uri: must not be empty",
        ),
        (
            coordinator_pb2.CommitTransactionRequest(
                job=JOB, writer_epoch=1, batch=0, files=[common_pb2.StagedFile(uri="f", count=-1, sha256="a" * 64)]
            ),
            "files[0].count: must be >= 0, got -1",
        ),
        (
            coordinator_pb2.CommitTransactionRequest(
                job=JOB, writer_epoch=1, batch=0, files=[common_pb2.StagedFile(uri="f", count=1, sha256="xyz")]
            ),
            "files[0].sha256: must be 64 hex characters, got 'xyz'",
        ),
    ],
)
def test_invalid_arguments(stub: Stub, fakes: FakeParticipants, request_: object, message: str) -> None:
    _register(stub, fakes)
    error = _error(lambda: stub.CommitTransaction(request_))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in error.details()


def test_other_invalid_arguments(stub: Stub, fakes: FakeParticipants) -> None:
    epoch = _register(stub, fakes)
    error = _error(
        lambda: stub.ListTransactions(
            coordinator_pb2.ListTransactionsRequest(states=[common_pb2.TRANSACTION_STATE_UNSPECIFIED])
        )
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    error = _error(lambda: stub.ResolveTransaction(coordinator_pb2.ResolveTransactionRequest(job=JOB, batch=0)))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "RESOLUTION_COMMIT or RESOLUTION_ABORT" in error.details()
    twice = [coordinator_pb2.ParticipantRef(sink="a", target="x:1")] * 2
    error = _error(
        lambda: stub.RegisterParticipants(
            coordinator_pb2.RegisterParticipantsRequest(job=JOB, writer_epoch=epoch, participants=twice)
        )
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "listed twice" in error.details()


def test_unknown_job_is_not_found(stub: Stub) -> None:
    for call in (
        lambda: stub.CommitTransaction(coordinator_pb2.CommitTransactionRequest(job="nojob", writer_epoch=1, batch=0)),
        lambda: stub.RegisterParticipants(
            coordinator_pb2.RegisterParticipantsRequest(
                job="nojob", writer_epoch=1, participants=[coordinator_pb2.ParticipantRef(sink="a", target="b:1")]
            )
        ),
    ):
        error = _error(call)
        assert error.code() == grpc.StatusCode.NOT_FOUND
        assert "unknown job 'nojob'" in error.details()


def test_a_fenced_writer_gets_failed_precondition(stub: Stub, fakes: FakeParticipants) -> None:
    old = _register(stub, fakes)
    stub.RegisterWriter(coordinator_pb2.RegisterWriterRequest(job=JOB, writer_id="driver-2"))
    error = _error(
        lambda: stub.CommitTransaction(
            coordinator_pb2.CommitTransactionRequest(job=JOB, writer_epoch=old, batch=0, files=_files(0))
        )
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "another writer owns the job" in error.details()
    assert fakes["kafka"].count("prepare") == 0


def test_resolving_a_decided_transaction_is_failed_precondition(stub: Stub, fakes: FakeParticipants) -> None:
    epoch = _register(stub, fakes)
    stub.CommitTransaction(
        coordinator_pb2.CommitTransactionRequest(job=JOB, writer_epoch=epoch, batch=0, files=_files(0))
    )
    error = _error(
        lambda: stub.ResolveTransaction(
            coordinator_pb2.ResolveTransactionRequest(job=JOB, batch=0, resolution=coordinator_pb2.RESOLUTION_ABORT)
        )
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "cannot be made to abort" in error.details()


def test_health_reflection_and_metrics(server: CoordinatorServer, channel: grpc.Channel, stub: Stub) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    for name in ("", SERVICE_NAME):
        status = health.Check(health_pb2.HealthCheckRequest(service=name)).status
        assert status == health_pb2.HealthCheckResponse.SERVING
    reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
    answers = list(reflection.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
    services = {service.name for service in answers[0].list_services_response.service}
    assert {"onceflow.v1.TransactionCoordinator", "grpc.health.v1.Health"} <= services
    stub.GetTransaction(coordinator_pb2.GetTransactionRequest(job=JOB, batch=0))
    with urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    for name in (
        "onceflow_coordinator_transactions_total",
        "onceflow_coordinator_prepare_seconds",
        "onceflow_coordinator_commit_seconds",
        "onceflow_coordinator_in_doubt_transactions",
    ):
        assert name in text


def test_admin_cli(
    server: CoordinatorServer,
    stub: Stub,
    fakes: FakeParticipants,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    epoch = _register(stub, fakes)
    stub.CommitTransaction(
        coordinator_pb2.CommitTransactionRequest(job=JOB, writer_epoch=epoch, batch=0, files=_files(0))
    )
    target = ["--coordinator", f"127.0.0.1:{server.port}"]

    assert onceflow_main(["txn", "list", *target, "--job", JOB]) == 0
    out = capsys.readouterr().out
    assert "ipcount:0" in out and "COMMITTED" in out

    assert onceflow_main(["txn", "show", "ipcount:0", *target]) == 0
    out = capsys.readouterr().out
    assert "state         COMMITTED" in out and "kafka  prepared=yes  acked=yes" in out

    assert onceflow_main(["txn", "resolve", "ipcount:0", "--abort", "--yes", *target]) == 1
    assert "FAILED_PRECONDITION" in capsys.readouterr().err

    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert onceflow_main(["txn", "resolve", "ipcount:7", "--abort", *target]) == 1
    assert "not resolved" in capsys.readouterr().out
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert onceflow_main(["txn", "resolve", "ipcount:7", "--abort", "--reason", "cleanup", *target]) == 0
    assert "ipcount:7: ABORTED" in capsys.readouterr().out
