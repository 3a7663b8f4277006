"""One shard of a sharded sink behind the Participant service: it refuses requests for another shard,
keeps only the keys it owns, records its commits under ``<sink>#<index>``, and the readers see the
sink whole (a batch is committed once every shard committed it)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import grpc
import pydantic
import pytest

from onceflow.contract import Shard, TransactionId
from onceflow.contract.clients import ParticipantClient
from onceflow.contract.shards import key_shard
from onceflow.core.settings import GrpcServerSettings
from onceflow.ipcount.schema import ip_count_table_binding
from onceflow.sinks.readback import SqliteReader
from onceflow.sinks.server import ParticipantSettings, SqliteOptions, SqliteSink
from onceflow.sinks.server.settings import StagingSettings
from onceflow.sinks.service import ParticipantServer
from onceflow.sinks.sqlite import SqliteParticipant

from .conftest import W0, Stage, bound, row

SHARD = Shard(1, 2)
TXN = TransactionId("job", 0)
#: The job's binding of the sink (what the coordinator sends with each request).
RESULTS = [ip_count_table_binding("main")]


@pytest.fixture
def client(tmp_path: Path, staging_root: Path) -> Iterator[ParticipantClient]:
    """A client of a participant server (in-process) serving shard 1 of 2 of the SQLite sink ``main``."""
    options = SqliteOptions(path=str(tmp_path / "main.db"))
    settings = ParticipantSettings(
        staging=StagingSettings(roots=[str(staging_root)]),
        sinks=[SqliteSink(name="main", kind="sqlite", options=options, shard=1, shards=2)],
        server=GrpcServerSettings(port=0),
    )
    server = ParticipantServer(settings).start()
    try:
        with ParticipantClient(f"127.0.0.1:{server.port}") as participant:
            yield participant
    finally:
        server.stop(grace=0)


def test_a_request_for_another_shard_is_refused_naming_both(client: ParticipantClient, stage: Stage) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        client.prepare_bindings("main", "job", [ip_count_table_binding("main")], shard=Shard(1, 3))
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "sink 'main': this participant serves shard 1 of 2" in str(refused.value.details())
    assert "the coordinator addressed shard 1 of 3" in str(refused.value.details())
    files = stage("job", 0, [row("a", 1)])
    vote = client.prepare_transaction("main", TXN, files)  # no shard: the coordinator thinks it is the whole sink
    assert not vote.vote_commit
    assert vote.reason.startswith("wrong shard: sink 'main': this participant serves shard 1 of 2")
    assert "addressed unsharded" in vote.reason
    with pytest.raises(grpc.RpcError) as commit:
        client.commit_prepared_transaction("main", TXN, files, shard=Shard(0, 2))
    assert commit.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert client.list_prepared_transactions() == []


def test_a_shard_registered_without_bindings_is_refused_naming_the_job(client: ParticipantClient) -> None:
    """A shard cannot tell its rows without the job's (keyed) bindings, and has none of its own: the job's
    registration fails before any batch."""
    with pytest.raises(grpc.RpcError) as refused:
        client.prepare_bindings("main", "job", [], shard=SHARD)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "sink 'main', job 'job': no binding for output 'results'" in str(refused.value.details())


def test_a_shard_keeps_its_keys_and_records_its_own_commits(
    client: ParticipantClient, stage: Stage, tmp_path: Path
) -> None:
    """Steps:
    1. Shard 1 of 2 prepares a batch of the keyed IP-count binding (every shard gets every file): it
       votes yes with the rows of the keys it owns, and commits them under ``main#1``.
    2. A shard whose share of a batch is empty prepares with no files and still records the batch.
    3. The reader sees the sink whole: nothing committed until shard 0 (here a participant in-process
       on the same file) committed too; then the last batch both committed.
    """
    rows = [row(f"10.0.0.{i}", i, W0 + 5_000 * (i % 3)) for i in range(40)]
    files = stage("job", 0, rows[:20], rows[20:])
    mine = [r for r in rows if key_shard((r["window_start"], r["ip"]), 2) == 1]
    assert 5 < len(mine) < 35
    # Step 1
    vote = client.prepare_transaction("main", TXN, files, RESULTS, shard=SHARD)
    assert (vote.vote_commit, vote.rows) == (True, len(mine))
    client.commit_prepared_transaction("main", TXN, files, RESULTS, shard=SHARD)
    db = tmp_path / "main.db"
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT ip FROM ip_counts ORDER BY ip").fetchall()
        commits = conn.execute("SELECT sink, job, batch FROM onceflow_commits").fetchall()
    assert [ip for (ip,) in stored] == sorted(r["ip"] for r in mine)
    assert commits == [("main#1", "job", 0)]
    # Step 2
    empty = TransactionId("job", 1)
    assert client.prepare_transaction("main", empty, [], RESULTS, shard=SHARD).vote_commit
    client.commit_prepared_transaction("main", empty, [], RESULTS, shard=SHARD)
    # Step 3
    reader = SqliteReader("main", db, shards=2)
    assert reader.last_committed("job") == -1
    other = SqliteParticipant("main", db, shard=Shard(0, 2))
    try:
        assert other.prepare(TXN, files, bound(other)).rows == len(rows) - len(mine)
        other.commit(TXN)
    finally:
        other.close()
    assert reader.last_committed("job") == 0
    assert len(reader.rows(ip_count_table_binding("main"))) == len(rows)
    assert SqliteReader("main", db).last_committed("job") == -1, "the unsharded name has no records here"


def test_a_shard_index_beyond_the_count_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(pydantic.ValidationError, match=r"shard 2 is not below shards = 2 \(sink 'main'\)"):
        SqliteSink(name="main", kind="sqlite", options=SqliteOptions(path=str(tmp_path / "x.db")), shard=2, shards=2)
