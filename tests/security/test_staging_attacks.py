"""Staged-file URIs and the staging GC under attack (issue 22, item 4).

Each attack is made on real processes, as a logged-in client of the gRPC services would make it:

- ``file://localhost/<root>/x`` passed the confinement check (host ``localhost``, path inside the
  root) but the participant opened ``localhost/<root>/x`` relative to its working directory, so a
  file outside every staging root was prepared. Now the check and the open use one parser, and the
  participant opens exactly ``/<root>/x``.
- A chained URL (``<root>/x::http://...``) passed the check as a local path and was then opened
  through fsspec's URL chaining: UNKNOWN with a traceback. Now it is INVALID_ARGUMENT, for Prepare
  and Commit alike, and nothing is dialled.
- A participant whose staging root is an S3 prefix reads only from that bucket and prefix.
- The coordinator's staging GC deleted ``<root>/<job>/<batch>`` through a symlinked job directory,
  so a job named after a link deleted a directory outside the root. Now it never follows a symlink:
  the batch is left alone and the refusal is logged.
"""

from __future__ import annotations

import socket
import sqlite3
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract import TransactionId, TransactionState
from onceflow.contract.clients import ParticipantClient
from onceflow.contract.staging import S3Settings, StagedFile, StagingStore, StagingWriter
from onceflow.core.avro import IpCount
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA, ip_count_table_binding
from onceflow.testing.coordinator.cluster import TwoPhaseCommitCluster, wait_for_log
from onceflow.testing.s3 import S3ProxyProcess
from onceflow.testing.sinks.process import ParticipantProcess

pytestmark = pytest.mark.slow
W0 = 1_700_000_000_000
COMMITTED = TransactionState.COMMITTED
#: The job's binding of the sink, sent with every transaction (a participant has none of its own).
RESULTS = [ip_count_table_binding("sqlite")]


def _rows(ip: str, count: int = 7) -> list[IpCount]:
    return [IpCount(window_start=W0, window_end=W0 + 5000, ip=ip, count=count)]


class Participant:
    def __init__(self, process: ParticipantProcess, client: ParticipantClient, root: Path, cwd: Path, db: Path):
        self.process, self.client, self.root, self.cwd, self.db = process, client, root, cwd, db

    def results(self) -> list[tuple[str, int]]:
        with sqlite3.connect(self.db) as db:
            return sorted(db.execute("SELECT ip, count FROM ip_counts").fetchall())


@pytest.fixture
def participant(tmp_path: Path) -> Iterator[Participant]:
    """A SQLite participant process whose staging root is ``tmp_path/root``, running in ``tmp_path/cwd``."""
    root, cwd, db = tmp_path / "root", tmp_path / "cwd", tmp_path / "sink.db"
    root.mkdir()
    cwd.mkdir()
    settings = {
        "coordinator": {"target": "127.0.0.1:1"},
        "sinks": [{"name": "sqlite", "kind": "sqlite", "options": {"path": str(db)}}],
        "staging": {"roots": [str(root)]},
    }
    process = ParticipantProcess(tmp_path / "participant", settings, cwd=cwd).start()
    client = ParticipantClient(process.target, timeout_s=30)
    try:
        yield Participant(process, client, root, cwd, db)
    finally:
        client.close()
        process.stop()


def test_a_localhost_file_uri_opens_the_path_it_names(participant: Participant) -> None:
    """The decoy under ``<cwd>/localhost/<root>/...`` is never read: the URI names ``/<root>/...``."""
    real = StagingWriter(str(participant.root), "job", 0).write("part-0", _rows("10.0.0.1"), IP_COUNT_ARROW_SCHEMA)
    path = real.uri.removeprefix("file://")
    decoy_dir = participant.cwd / "localhost" / Path(path).parent.relative_to("/")
    decoy = StagingWriter(str(participant.cwd / "scratch"), "job", 0).write(
        "part-0", _rows("6.6.6.6", 1000), IP_COUNT_ARROW_SCHEMA
    )
    decoy_dir.mkdir(parents=True)
    (decoy_dir / Path(path).name).write_bytes(Path(decoy.uri.removeprefix("file://")).read_bytes())
    uri = f"file://localhost{path}"
    txn = TransactionId("job", 0)

    lying = participant.client.prepare_transaction("sqlite", txn, [StagedFile(uri, decoy.count, decoy.sha256)], RESULTS)
    assert not lying.vote_commit, "the decoy outside the staging root was prepared"
    assert path in lying.reason and "sha256" in lying.reason, lying.reason

    honest = participant.client.prepare_transaction("sqlite", txn, [StagedFile(uri, real.count, real.sha256)], RESULTS)
    assert honest.vote_commit, honest.reason
    participant.client.commit_prepared_transaction("sqlite", txn, [StagedFile(uri, real.count, real.sha256)], RESULTS)
    assert participant.results() == [("10.0.0.1", 7)]


def test_a_chained_url_is_invalid_argument_and_dials_nothing(participant: Participant) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(1.0)
        port = listener.getsockname()[1]
        for uri in (
            f"{participant.root}/job/0/part-0.arrow::http://127.0.0.1:{port}/part-0.arrow",
            f"file://{participant.root}/job/0/x::http://127.0.0.1:{port}/x",
            f"simplecache::file://{participant.root}/job/0/part-0.arrow",
        ):
            file = StagedFile(uri, 1, "0" * 64)
            for call in (participant.client.prepare_transaction, participant.client.commit_prepared_transaction):
                with pytest.raises(grpc.RpcError) as refused:
                    call("sqlite", TransactionId("job", 0), [file])
                assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (uri, refused.value.details())
                assert "chained" in (refused.value.details() or ""), refused.value.details()
        with pytest.raises(TimeoutError):
            listener.accept()  # nobody connected
    assert participant.process.is_running()
    assert participant.client.list_prepared_transactions(timeout_s=10) == []


@pytest.fixture
def gc_cluster(broker: EmbeddedBroker, tmp_path: Path) -> Iterator[TwoPhaseCommitCluster]:
    """A coordinator (staging GC on) and a SQLite participant on the embedded broker."""
    cluster = TwoPhaseCommitCluster(
        tmp_path / "cluster", bootstrap_servers=broker.bootstrap_servers, postgres_dsn="", sinks=("sqlite",)
    )
    with cluster:
        yield cluster


def _commit_elsewhere_staged(cluster: TwoPhaseCommitCluster, job: str, batch: int) -> None:
    """Commit ``job:batch`` with files staged (legitimately, inside the root) under another job's directory."""
    epoch = cluster.register(job)
    files = cluster.stage("carrier", batch, _rows(f"10.0.0.{batch}"))
    response = cluster.commit(job, epoch, batch, files)
    assert response.state == COMMITTED, response.reason


def test_the_staging_gc_never_follows_a_symlink(gc_cluster: TwoPhaseCommitCluster, tmp_path: Path) -> None:
    """``<root>/victim`` links outside the root, and so does ``<root>/victim2/3``: committing
    ``victim:3`` and ``victim2:3`` must not delete what the links point at, and the GC says why it left
    the batches alone. An ordinary batch is still collected."""
    precious = []
    for job, link in (("victim", "job"), ("victim2", "batch")):
        outside = tmp_path / f"outside-{job}"
        (outside / "3").mkdir(parents=True)
        (outside / "3" / "precious.txt").write_text("keep me")
        precious.append(outside / "3" / "precious.txt")
        if link == "job":
            (gc_cluster.staging_root / job).symlink_to(outside, target_is_directory=True)
        else:
            (gc_cluster.staging_root / job).mkdir()
            (gc_cluster.staging_root / job / "3").symlink_to(outside / "3", target_is_directory=True)
        _commit_elsewhere_staged(gc_cluster, job, 3)

    deadline = time.monotonic() + 20
    while gc_cluster.coordinator.log_tail(400).count("staging.gc_refused") < 2 and all(p.exists() for p in precious):
        assert time.monotonic() < deadline, gc_cluster.logs()
        time.sleep(0.05)
    for path in precious:
        assert path.read_text() == "keep me", "the GC deleted a directory outside the staging root"
    wait_for_log(gc_cluster.coordinator, "staging.gc_refused", times=2)
    assert "symlink" in gc_cluster.coordinator.log_tail(400)

    _commit_elsewhere_staged(gc_cluster, "carrier", 4)
    deadline = time.monotonic() + 20
    while (gc_cluster.staging_root / "carrier" / "4").exists():
        assert time.monotonic() < deadline, gc_cluster.logs()
        time.sleep(0.05)


def test_an_s3_participant_accepts_only_its_bucket_and_prefix(s3proxy: S3ProxyProcess, tmp_path: Path) -> None:
    """A participant whose root is ``s3://onceflow/<test>/allowed`` refuses the same valid file staged
    under a sibling prefix or in another bucket (a no vote; a Commit is INVALID_ARGUMENT), and
    prepares it from its own prefix. Neither its log nor its metrics show the store's credentials."""
    s3proxy.create_bucket("elsewhere")
    allowed = s3proxy.uri(f"{tmp_path.name}/allowed")
    store = StagingStore(S3Settings.model_validate(s3proxy.s3_settings()), environ={})
    staged = {
        place: StagingWriter(root, "job", 0, store=store).write("part-0", _rows("10.0.0.9"), IP_COUNT_ARROW_SCHEMA)
        for place, root in (
            ("allowed", allowed),
            ("sibling", s3proxy.uri(f"{tmp_path.name}/allowed-not")),
            ("other bucket", s3proxy.uri(f"{tmp_path.name}/allowed", bucket="elsewhere")),
        )
    }
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        metrics_port = sock.getsockname()[1]
    settings = {
        "coordinator": {"target": "127.0.0.1:1"},
        "sinks": [{"name": "sqlite", "kind": "sqlite", "options": {"path": str(tmp_path / "sink.db")}}],
        "staging": {"roots": [allowed], "allowed_schemes": ["s3"], "s3": s3proxy.s3_settings()},
        "metrics": {"port": metrics_port},
    }
    process = ParticipantProcess(tmp_path / "participant", settings).start()
    try:
        with ParticipantClient(process.target, timeout_s=30) as client:
            for place in ("sibling", "other bucket"):
                file = staged[place]
                vote = client.prepare_transaction("sqlite", TransactionId("job", 0), [file])
                assert not vote.vote_commit and "outside the staging roots" in vote.reason, (place, vote.reason)
                with pytest.raises(grpc.RpcError) as refused:
                    client.commit_prepared_transaction("sqlite", TransactionId("job", 0), [file])
                assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, place
            assert client.prepare_transaction(
                "sqlite", TransactionId("job", 0), [staged["allowed"]], RESULTS
            ).vote_commit
        exposed = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
        assert "onceflow_participant" in exposed
        for text in (exposed, process.log_since_start()):
            assert s3proxy.secret_access_key not in text and s3proxy.access_key_id not in text
    finally:
        process.stop()
