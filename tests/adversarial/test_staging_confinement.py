"""A participant opens staged files only under its staging roots and schemes (issue 14).

Before, the participant opened any URI a Prepare named through fsspec: ``/etc/passwd`` and ``..``
paths were read (and the checksum error told the caller the file's real SHA-256), a valid staged
file outside the staging root was committed, an ``ftp://`` URI made it dial out and a ``data:`` URI
was read. Now each is a no vote naming the refusal, decided before anything is opened.

A real participant process (SQLite sink) behind its gRPC server, driven like the coordinator does.
"""

from __future__ import annotations

import base64
import hashlib
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from onceflow.contract import PrepareVote, TransactionId
from onceflow.contract.clients import ParticipantClient
from onceflow.contract.staging import StagedFile, StagingWriter
from onceflow.contract.staging.confinement import PathNotAllowed, StagingConfinement
from onceflow.core.avro import IpCount
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA, ip_count_table_binding
from onceflow.testing.sinks.process import ParticipantProcess

pytestmark = pytest.mark.slow
W0 = 1_700_000_000_000
#: The job's binding of the sink, sent with every transaction (a participant has none of its own).
RESULTS = [ip_count_table_binding("sqlite")]


class Participant:
    def __init__(self, process: ParticipantProcess, client: ParticipantClient, staging: Path, db: Path) -> None:
        self.process, self.client, self.staging, self.db = process, client, staging, db

    def prepare(self, batch: int, *files: StagedFile) -> PrepareVote:
        return self.client.prepare_transaction("sqlite", TransactionId("job", batch), files, RESULTS)

    def prepared(self) -> list[int]:
        return [txn.batch for _, txn in self.client.list_prepared_transactions(timeout_s=10)]

    def results(self) -> list[tuple[str, int]]:
        with sqlite3.connect(self.db) as db:
            return sorted(db.execute("SELECT ip, count FROM ip_counts").fetchall())


@pytest.fixture
def participant(tmp_path: Path) -> Iterator[Participant]:
    staging = tmp_path / "staging"
    staging.mkdir()
    db = tmp_path / "sink.db"
    settings = {
        "coordinator": {"target": "127.0.0.1:1"},
        "sinks": [{"name": "sqlite", "kind": "sqlite", "options": {"path": str(db)}}],
        "staging": {"roots": [str(staging)]},
        "log": {"level": "INFO"},
    }
    process = ParticipantProcess(tmp_path / "participant", settings).start()
    client = ParticipantClient(process.target, timeout_s=30)
    try:
        client.prepare_bindings("sqlite", "job", RESULTS)  # the job's registration creates its table
        yield Participant(process, client, staging, db)
    finally:
        client.close()
        process.stop()


def _rows(ip: str = "10.0.0.1") -> list[IpCount]:
    return [IpCount(window_start=W0, window_end=W0 + 5000, ip=ip, count=7)]


def _assert_refused(response: PrepareVote, *secrets: str) -> None:
    assert not response.vote_commit, response
    assert "staged file refused" in response.reason and "is not allowed" in response.reason, response.reason
    for secret in secrets:
        assert secret not in response.reason


def test_system_files_and_dot_dot_paths_are_refused_unread(participant: Participant) -> None:
    passwd = Path("/etc/passwd").read_bytes()
    real_sha = hashlib.sha256(passwd).hexdigest()
    escape = f"{participant.staging}/../../../../../../etc/passwd"
    for batch, uri in enumerate(["/etc/passwd", "file:///etc/passwd", escape, f"file://{escape}"]):
        response = participant.prepare(batch, StagedFile(uri, 1, "0" * 64))
        _assert_refused(response, real_sha, "root:")
    assert participant.prepared() == []


def test_a_valid_staged_file_outside_the_root_is_not_committed(participant: Participant, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    outside = StagingWriter(str(elsewhere), "job", 0).write("part-0", _rows(), IP_COUNT_ARROW_SCHEMA)
    _assert_refused(participant.prepare(0, outside), outside.sha256)

    # a symlink inside the root pointing at it is resolved, and refused too
    link_dir = participant.staging / "job" / "1"
    link_dir.mkdir(parents=True)
    link = link_dir / "part-0.avro"
    link.symlink_to(outside.uri.removeprefix("file://"))
    _assert_refused(participant.prepare(1, StagedFile(f"file://{link}", outside.count, outside.sha256)))

    # a commit naming it is refused as well (INVALID_ARGUMENT), before any redo from staging
    with pytest.raises(grpc.RpcError) as refused:
        participant.client.commit_prepared_transaction("sqlite", TransactionId("job", 0), [outside])
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert participant.prepared() == [] and participant.results() == []

    # the same rows staged under the root are prepared as before
    inside = StagingWriter(str(participant.staging), "job", 2).write("part-0", _rows(), IP_COUNT_ARROW_SCHEMA)
    assert participant.prepare(2, inside).vote_commit
    assert participant.prepared() == [2]


def test_an_ftp_uri_does_not_make_the_participant_dial_out(participant: Participant) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(1.0)
        port = listener.getsockname()[1]
        response = participant.prepare(0, StagedFile(f"ftp://127.0.0.1:{port}/staging/job/0/part-0.avro", 1, "0" * 64))
        _assert_refused(response)
        with pytest.raises(TimeoutError):
            listener.accept()  # nobody connected
    assert "scheme 'ftp'" in response.reason


def test_a_data_uri_is_not_read(participant: Participant, tmp_path: Path) -> None:
    staged = StagingWriter(str(tmp_path / "scratch"), "job", 0).write("part-0", _rows(), IP_COUNT_ARROW_SCHEMA)
    payload = Path(staged.uri.removeprefix("file://")).read_bytes()
    uri = "data:application/octet-stream;base64," + base64.b64encode(payload).decode()
    response = participant.prepare(0, StagedFile(uri, staged.count, staged.sha256))
    _assert_refused(response)
    assert "scheme 'data'" in response.reason
    assert participant.prepared() == []


def test_a_prepare_over_the_size_limits_is_invalid_argument(participant: Participant) -> None:
    files = [StagedFile(f"{participant.staging}/job/0/part-{i}.avro", 1, "0" * 64) for i in range(10_000)]
    with pytest.raises(grpc.RpcError) as refused:
        participant.prepare(0, *files)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "limit of 1000" in (refused.value.details() or "")
    with pytest.raises(grpc.RpcError) as long_uri:
        participant.prepare(0, StagedFile(f"{participant.staging}/{'x' * 5000}.avro", 1, "0" * 64))
    assert long_uri.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "limit of 4096 bytes" in (long_uri.value.details() or "")


@pytest.mark.parametrize(
    ("uri", "allowed"),
    [
        ("s3://bucket/staging/job/0/part-0.avro", True),
        ("s3://bucket/staging-other/job/0/part-0.avro", False),
        ("s3://bucket/staging/../secrets/part-0.avro", False),
        ("s3://bucket/staging/%2e%2e/secrets/part-0.avro", False),
        ("file://otherhost/staging/job/0/part-0.avro", False),
        ("file:///srv/staging/job/0/part-0.avro?x=1", False),
        ("file:///srv/staging/job/0/part-0.avro", True),
        ("/srv/staging/job/0/part-0.avro", True),
        ("/srv/staging-other/job/0/part-0.avro", False),
        ("hdfs://nn/staging/job/0/part-0.avro", False),
    ],
)
def test_the_confinement_rules(uri: str, allowed: bool) -> None:
    confinement = StagingConfinement(["/srv/staging", "s3://bucket/staging"], ["file", "s3"])
    if allowed:
        assert confinement.check(uri) == uri
    else:
        with pytest.raises(PathNotAllowed):
            confinement.check(uri)
