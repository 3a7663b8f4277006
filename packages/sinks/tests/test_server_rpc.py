"""The Participant gRPC service in-process, over a real channel, hosting two SQLite sinks."""

from __future__ import annotations

import sqlite3
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pyarrow as pa
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from onceflow.contract import WHOLE_SINK, CommittedBatches, HostedCommits, SinkBinding, SinkMode
from onceflow.contract.clients import ParticipantClient
from onceflow.contract.proto import binding_to_proto
from onceflow.contract.proto import file_to_proto as staged_file_to_proto
from onceflow.core.settings import GrpcServerSettings, MetricsSettings
from onceflow.ipcount.schema import ip_count_table_binding
from onceflow.proto.v1 import common_pb2, participant_pb2, participant_pb2_grpc
from onceflow.sinks.server import SERVICE_NAME, ParticipantSettings, SqliteOptions, SqliteSink
from onceflow.sinks.server.settings import StagingSettings
from onceflow.sinks.service import ParticipantServer

from .conftest import W0, Stage, row


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ParticipantServer]:
    settings = ParticipantSettings(
        staging=StagingSettings(roots=[str(tmp_path)]),
        sinks=[
            SqliteSink(name="main", kind="sqlite", options=SqliteOptions(path=str(tmp_path / "main.db"))),
            SqliteSink(name="audit", kind="sqlite", options=SqliteOptions(path=str(tmp_path / "audit.db"))),
        ],
        server=GrpcServerSettings(port=0),
    )
    instance = ParticipantServer(settings)
    instance.start()
    yield instance
    instance.stop(grace=0)


@pytest.fixture
def client(server: ParticipantServer) -> Iterator[ParticipantClient]:
    with ParticipantClient(f"127.0.0.1:{server.port}") as participant:
        yield participant


@pytest.fixture
def channel(client: ParticipantClient) -> grpc.Channel:
    return client.channel


@pytest.fixture
def stub(client: ParticipantClient) -> participant_pb2_grpc.ParticipantStub:
    """The raw stub: these tests send the malformed requests the typed client would not build."""
    return client.stub


def _id(job: str, batch: int) -> common_pb2.TransactionId:
    return common_pb2.TransactionId(job=job, batch=batch)


def _bound(sink: str) -> list[common_pb2.SinkBinding]:
    """What the coordinator sends with a transaction of a job writing the IP-count results to ``sink``."""
    return [binding_to_proto(ip_count_table_binding(sink))]


def test_prepare_list_commit_abort_over_grpc(
    client: ParticipantClient, stub: participant_pb2_grpc.ParticipantStub, stage: Stage, tmp_path: Path
) -> None:
    files = [staged_file_to_proto(f) for f in stage("job", 0, [row("a", 1), row("b", 2)])]
    for sink in ("main", "audit"):
        vote = stub.PrepareTransaction(
            participant_pb2.PrepareTransactionRequest(sink=sink, id=_id("job", 0), files=files, bindings=_bound(sink))
        )
        assert (vote.vote_commit, vote.rows, vote.reason) == (True, 2, "")

    listed = stub.ListPreparedTransactions(participant_pb2.ListPreparedTransactionsRequest())
    assert [(t.sink, t.id.job, t.id.batch) for t in listed.transactions] == [("audit", "job", 0), ("main", "job", 0)]
    only_main = stub.ListPreparedTransactions(participant_pb2.ListPreparedTransactionsRequest(sink="main"))
    assert [t.sink for t in only_main.transactions] == ["main"]

    stub.CommitPreparedTransaction(participant_pb2.CommitPreparedTransactionRequest(sink="main", id=_id("job", 0)))
    stub.CommitPreparedTransaction(participant_pb2.CommitPreparedTransactionRequest(sink="main", id=_id("job", 0)))
    stub.AbortPreparedTransaction(participant_pb2.AbortPreparedTransactionRequest(sink="audit", id=_id("job", 0)))
    stub.AbortPreparedTransaction(participant_pb2.AbortPreparedTransactionRequest(sink="audit", id=_id("job", 7)))

    with sqlite3.connect(tmp_path / "main.db") as db:
        assert sorted(db.execute("SELECT window_start, ip, count FROM ip_counts")) == [(W0, "a", 1), (W0, "b", 2)]
    with sqlite3.connect(tmp_path / "audit.db") as db:
        assert list(db.execute("SELECT * FROM ip_counts")) == []
    assert not stub.ListPreparedTransactions(participant_pb2.ListPreparedTransactionsRequest()).transactions

    assert client.list_committed_batches() == [
        HostedCommits("audit", WHOLE_SINK, ()),
        HostedCommits("main", WHOLE_SINK, (CommittedBatches("job", 0, (0,)),)),
    ]
    assert client.list_committed_batches("audit", "job") == [HostedCommits("audit")]
    with pytest.raises(grpc.RpcError) as too_many:
        client.list_committed_batches(max_batches=10_001)
    assert too_many.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "max_batches must be 0 to 10000" in (too_many.value.details() or "")


def test_no_vote_is_a_response_naming_the_file(stub: participant_pb2_grpc.ParticipantStub, stage: Stage) -> None:
    (file,) = stage("job", 0, [row("a", 1)])
    Path(file.uri.removeprefix("file://")).unlink()
    vote = stub.PrepareTransaction(
        participant_pb2.PrepareTransactionRequest(
            sink="main", id=_id("job", 0), files=[staged_file_to_proto(file)], bindings=_bound("main")
        )
    )
    assert not vote.vote_commit
    assert file.uri in vote.reason and "does not exist" in vote.reason


GOOD_FILE = common_pb2.StagedFile(uri="file:///staging/job/0/part-0.avro", count=1, sha256="ab" * 32)


@pytest.mark.parametrize(
    ("request_", "code", "message"),
    [
        (
            participant_pb2.PrepareTransactionRequest(id=_id("j", 0), files=[GOOD_FILE]),
            "INVALID_ARGUMENT",
            "sink must be set",
        ),
        (
            participant_pb2.PrepareTransactionRequest(sink="nope", id=_id("j", 0), files=[GOOD_FILE]),
            "NOT_FOUND",
            "no sink named 'nope' here; hosted sinks: audit, main",
        ),
        (
            participant_pb2.PrepareTransactionRequest(sink="main", files=[GOOD_FILE]),
            "INVALID_ARGUMENT",
            "id must be set",
        ),
        (
            participant_pb2.PrepareTransactionRequest(sink="main", id=_id("", 0), files=[GOOD_FILE]),
            "INVALID_ARGUMENT",
            "id.job must not be empty",
        ),
        (
            participant_pb2.PrepareTransactionRequest(sink="main", id=_id("j", -1), files=[GOOD_FILE]),
            "INVALID_ARGUMENT",
            "id.batch must be >= 0, got -1",
        ),
        (participant_pb2.PrepareTransactionRequest(sink="main", id=_id("j", 0)), "INVALID_ARGUMENT", "files must list"),
        (
            participant_pb2.PrepareTransactionRequest(
                sink="main", id=_id("j", 0), files=[GOOD_FILE, common_pb2.StagedFile(count=1, sha256="ab" * 32)]
            ),
            "INVALID_ARGUMENT",
            "files[1].uri must not be empty",
        ),
        (
            participant_pb2.PrepareTransactionRequest(
                sink="main", id=_id("j", 0), files=[common_pb2.StagedFile(uri="file:///x", count=1, sha256="xyz")]
            ),
            "INVALID_ARGUMENT",
            "files[0].sha256 must be 64 hex digits",
        ),
        (
            participant_pb2.PrepareTransactionRequest(
                sink="main", id=_id("j", 0), files=[common_pb2.StagedFile(uri="file:///x", count=-2, sha256="ab" * 32)]
            ),
            "INVALID_ARGUMENT",
            "files[0].count must be >= 0",
        ),
        (participant_pb2.CommitPreparedTransactionRequest(sink="main"), "INVALID_ARGUMENT", "id must be set"),
        (
            participant_pb2.CommitPreparedTransactionRequest(sink="x", id=_id("j", 0)),
            "NOT_FOUND",
            "no sink named 'x'",
        ),
        (
            participant_pb2.CommitPreparedTransactionRequest(sink="main", id=_id("j", 5)),
            "FAILED_PRECONDITION",
            "cannot commit transaction j:5: it was never prepared",
        ),
        (participant_pb2.AbortPreparedTransactionRequest(id=_id("j", 0)), "INVALID_ARGUMENT", "sink must be set"),
        (
            participant_pb2.AbortPreparedTransactionRequest(sink="main", id=_id("j", -3)),
            "INVALID_ARGUMENT",
            "id.batch must be >= 0",
        ),
        (participant_pb2.ListPreparedTransactionsRequest(sink="zzz"), "NOT_FOUND", "no sink named 'zzz'"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_bad_requests_name_the_argument(
    stub: participant_pb2_grpc.ParticipantStub, request_: object, code: str, message: str
) -> None:
    method = {
        participant_pb2.PrepareTransactionRequest: stub.PrepareTransaction,
        participant_pb2.CommitPreparedTransactionRequest: stub.CommitPreparedTransaction,
        participant_pb2.AbortPreparedTransactionRequest: stub.AbortPreparedTransaction,
        participant_pb2.ListPreparedTransactionsRequest: stub.ListPreparedTransactions,
    }[type(request_)]
    with pytest.raises(grpc.RpcError) as info:
        method(request_)
    error = info.value
    assert isinstance(error, grpc.Call)
    assert error.code().name == code
    assert message in (error.details() or "")


def test_health_and_metrics(
    server: ParticipantServer, channel: grpc.Channel, stub: participant_pb2_grpc.ParticipantStub, stage: Stage
) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    answer = health.Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME))
    assert answer.status == health_pb2.HealthCheckResponse.SERVING

    files = [staged_file_to_proto(f) for f in stage("job", 0, [row("a", 1)])]
    stub.PrepareTransaction(
        participant_pb2.PrepareTransactionRequest(sink="main", id=_id("job", 0), files=files, bindings=_bound("main"))
    )
    stub.CommitPreparedTransaction(participant_pb2.CommitPreparedTransactionRequest(sink="main", id=_id("job", 0)))
    registry = server.metrics.service.registry
    assert registry.get_sample_value("onceflow_participant_prepares_total", {"sink": "main", "vote": "yes"}) == 1
    assert registry.get_sample_value("onceflow_participant_commits_total", {"sink": "main"}) == 1
    assert registry.get_sample_value("onceflow_participant_prepare_seconds_count", {"sink": "main"}) == 1
    assert server.metrics_port == 0, "metrics port 0 means no endpoint"


def test_metrics_endpoint(tmp_path: Path) -> None:
    settings = ParticipantSettings(
        staging=StagingSettings(roots=[str(tmp_path)]),
        server=GrpcServerSettings(port=0),
        sinks=[SqliteSink(name="main", kind="sqlite", options=SqliteOptions(path=str(tmp_path / "m.db")))],
        metrics=MetricsSettings(port=_free_port()),
    )
    server = ParticipantServer(settings)
    server.start()
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=10).read().decode()
        assert "onceflow_participant_prepares_total" in body
    finally:
        server.stop(grace=0)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_prepare_bindings_creates_tables_and_refuses_a_mismatch_naming_it(
    stub: participant_pb2_grpc.ParticipantStub, stage: Stage, tmp_path: Path
) -> None:
    schema = pa.schema([pa.field("path", pa.string()), pa.field("hits", pa.int64())])
    good = SinkBinding(sink="main", output="results", table="hits", mode=SinkMode.APPEND, schema=schema)
    stub.PrepareBindings(
        participant_pb2.PrepareBindingsRequest(sink="main", job="j", bindings=[binding_to_proto(good)])
    )
    with sqlite3.connect(tmp_path / "main.db") as db:
        assert [row[1] for row in db.execute('PRAGMA table_info("hits")')] == ["path", "hits"]

    wrong = SinkBinding(
        sink="main", table="hits", mode=SinkMode.APPEND, schema=pa.schema([pa.field("hits", pa.string())])
    )
    with pytest.raises(grpc.RpcError) as info:
        stub.PrepareBindings(
            participant_pb2.PrepareBindingsRequest(sink="main", job="j", bindings=[binding_to_proto(wrong)])
        )
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "table 'hits'" in info.value.details() and "column 'hits' has type INTEGER" in info.value.details()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sink": "audit"}, "bindings[0].sink is 'audit', but the request is for sink 'main'"),
        ({"mode": "merge"}, "bindings[0]: binding mode 'merge' must be one of upsert, append"),
        ({"arrow_schema": b"junk"}, "bindings[0]: not an Arrow IPC schema"),
        ({"arrow_schema": b""}, "bindings[0] (results -> main/t) has no arrow_schema"),
        ({"table": "x" * 300}, "bindings[0].table is 300 bytes"),
    ],
)
def test_a_bad_binding_is_invalid_argument_naming_it(
    stub: participant_pb2_grpc.ParticipantStub, change: dict[str, object], message: str
) -> None:
    binding = binding_to_proto(
        SinkBinding(sink="main", table="t", mode=SinkMode.APPEND, schema=pa.schema([pa.field("a", pa.int64())]))
    )
    for name, value in change.items():
        setattr(binding, name, value)
    with pytest.raises(grpc.RpcError) as info:
        stub.PrepareBindings(participant_pb2.PrepareBindingsRequest(sink="main", job="j", bindings=[binding]))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in info.value.details()
