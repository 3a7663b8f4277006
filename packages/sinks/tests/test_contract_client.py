"""The contract's typed ParticipantClient against a real in-process participant server (two SQLite sinks)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import grpc
import pyarrow as pa
import pytest

from onceflow.contract import SinkBinding, SinkMode, TransactionId
from onceflow.contract.clients import ParticipantClient
from onceflow.core.settings import GrpcServerSettings
from onceflow.ipcount.schema import ip_count_table_binding
from onceflow.sinks.server import ParticipantSettings, SqliteOptions, SqliteSink
from onceflow.sinks.server.settings import StagingSettings
from onceflow.sinks.service import ParticipantServer

from .conftest import W0, Stage, row


@pytest.fixture
def client(tmp_path: Path) -> Iterator[ParticipantClient]:
    settings = ParticipantSettings(
        staging=StagingSettings(roots=[str(tmp_path)]),
        sinks=[
            SqliteSink(name="main", kind="sqlite", options=SqliteOptions(path=str(tmp_path / "main.db"))),
            SqliteSink(name="audit", kind="sqlite", options=SqliteOptions(path=str(tmp_path / "audit.db"))),
        ],
        server=GrpcServerSettings(port=0),
    )
    server = ParticipantServer(settings)
    server.start()
    try:
        with ParticipantClient(f"127.0.0.1:{server.port}", timeout_s=10) as client:
            yield client
    finally:
        server.stop(grace=0)


def test_every_participant_rpc_through_the_client(client: ParticipantClient, stage: Stage, tmp_path: Path) -> None:
    txn = TransactionId("job", 0)
    files = stage("job", 0, [row("a", 1), row("b", 2)])
    for sink in ("main", "audit"):
        vote = client.prepare_transaction(sink, txn, files, [ip_count_table_binding(sink)])
        assert (vote.vote_commit, vote.rows, vote.reason) == (True, 2, "")
    assert client.list_prepared_transactions() == [("audit", txn), ("main", txn)]
    assert client.list_prepared_transactions("main", timeout_s=5) == [("main", txn)]

    client.commit_prepared_transaction("main", txn, files, [ip_count_table_binding("main")])
    client.commit_prepared_transaction("main", txn, files)  # idempotent (a re-sent commit, even without bindings)
    client.abort_prepared_transaction("audit", txn)
    client.abort_prepared_transaction("audit", TransactionId("job", 7))  # unknown: nothing to abort
    assert client.list_prepared_transactions() == []
    with sqlite3.connect(tmp_path / "main.db") as db:
        assert sorted(db.execute("SELECT window_start, ip, count FROM ip_counts")) == [(W0, "a", 1), (W0, "b", 2)]


def test_a_transaction_without_bindings_is_refused_naming_the_job_and_output(
    client: ParticipantClient, stage: Stage, tmp_path: Path
) -> None:
    """A participant has no bindings of its own: a prepare without any votes no, and a commit that would
    redo the batch without any fails, each naming the job and the unbound output; nothing is written."""
    files = stage("job", 0, [row("a", 1)])
    vote = client.prepare_transaction("main", TransactionId("job", 0), files)
    assert not vote.vote_commit
    assert vote.reason == (
        "sink 'main', job 'job': no binding for output 'results': a participant writes only what the job's "
        "bindings say (declare [[outputs.<name>]] with sink = 'main' and its table or topic in the job's config)"
    )
    with pytest.raises(grpc.RpcError) as redo:
        client.commit_prepared_transaction("main", TransactionId("job", 0), files)
    assert redo.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "job 'job': no binding for output 'results'" in redo.value.details()
    assert client.list_prepared_transactions() == []
    with sqlite3.connect(tmp_path / "main.db") as db:
        assert db.execute("SELECT name FROM sqlite_master WHERE name = 'ip_counts'").fetchall() == []


def test_prepare_bindings_and_a_binding_that_does_not_fit(client: ParticipantClient, tmp_path: Path) -> None:
    schema = pa.schema([pa.field("path", pa.string()), pa.field("hits", pa.int64())])
    client.prepare_bindings("main", "j", [SinkBinding(sink="main", table="hits", mode=SinkMode.APPEND, schema=schema)])
    with sqlite3.connect(tmp_path / "main.db") as db:
        assert [r[1] for r in db.execute('PRAGMA table_info("hits")')] == ["path", "hits"]
    wrong = SinkBinding(
        sink="main", table="hits", mode=SinkMode.APPEND, schema=pa.schema([pa.field("hits", pa.string())])
    )
    with pytest.raises(grpc.RpcError) as refused:
        client.prepare_bindings("main", "j", [wrong])
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "column 'hits' has type INTEGER" in refused.value.details()


def test_bad_arguments_are_refused_with_what_is_wrong(client: ParticipantClient, stage: Stage) -> None:
    files = stage("job", 0, [row("a", 1)])
    with pytest.raises(TypeError, match=r"txn must be a TransactionId, got 'job:0' \(str\)"):
        client.prepare_transaction("main", "job:0", files)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds, got -1"):
        client.abort_prepared_transaction("main", TransactionId("job", 0), timeout_s=-1)
    with pytest.raises(grpc.RpcError) as unknown:
        client.prepare_transaction("nope", TransactionId("job", 0), files)
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
    assert "no sink named 'nope' here; hosted sinks: audit, main" in unknown.value.details()
    with pytest.raises(grpc.RpcError) as no_files:
        client.prepare_transaction("main", TransactionId("job", 0), [])
    assert no_files.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "files must list" in no_files.value.details()
