"""The 2PC sink's driver side against a real coordinator process: outcomes become success or errors.

The coordinator runs with its in-memory log and fake participants over gRPC, so the test needs no
broker; the writer's ``commit``/``abort`` are called as Spark's commit runner calls them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql.datasource import WriterCommitMessage

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract import ParticipantRef, SinkBinding, SinkMode, TransactionId, TransactionState
from onceflow.contract.clients import CoordinatorClient
from onceflow.contract.staging import StagingWriter
from onceflow.core.avro import IpCount
from onceflow.core.settings import TlsSettings
from onceflow.ipcount.schema import ENTRYPOINT, IP_COUNT_ARROW_SCHEMA, results_outputs
from onceflow.spark.exceptions import CoordinatorUnavailable, JobDefinitionError, TransactionAborted, WriterFencedError
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.runner.attempt import register_driver
from onceflow.spark.sink import (
    SinkOptions,
    StagedFileMessage,
    TwoPhaseCommitWriter,
    parse_sink_options,
)
from onceflow.spark.sink.transaction import manifest_name
from onceflow.testing.coordinator import CoordinatorProcess, FakeParticipantServer

JOB = "ipcount"


@pytest.fixture
def participants() -> Iterator[FakeParticipantServer]:
    server = FakeParticipantServer(["kafka", "sqlite"]).start()
    yield server
    server.stop()


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    process = CoordinatorProcess(
        tmp_path / "coordinator",
        {"transaction_log": {"backend": "memory"}, "prepare_timeout_ms": 5000, "commit_wait_ms": 5000},
    )
    process.start()
    yield process
    process.stop()


def _register(coordinator: CoordinatorProcess, participants: FakeParticipantServer) -> int:
    with CoordinatorClient(coordinator.target) as client:
        registration = client.register_writer(JOB, "test-driver")
        client.register_participants(
            JOB, registration.epoch, [ParticipantRef(r.sink, r.target) for r in participants.refs]
        )
    return registration.epoch


def _stage(root: Path, batch: int, epoch: int) -> list[WriterCommitMessage | None]:
    writer = StagingWriter(str(root), JOB, batch)
    messages: list[WriterCommitMessage | None] = []
    for partition in range(2):
        rows = [IpCount(window_start=0, window_end=5000, ip=f"10.0.0.{partition}", count=partition + 1)]
        staged = writer.write(f"part-{partition:05d}-epoch-{epoch}-attempt-{partition}", rows, IP_COUNT_ARROW_SCHEMA)
        messages.append(StagedFileMessage(staged, partition, partition))
    return messages


def _writer(coordinator: CoordinatorProcess, epoch: int, root: Path) -> TwoPhaseCommitWriter:
    return TwoPhaseCommitWriter(
        SinkOptions(JOB, coordinator.target, epoch, str(root), rpc_timeout_s=30), IP_COUNT_ARROW_SCHEMA
    )


def test_a_committed_batch_is_committed_once_and_its_replay_succeeds(
    coordinator: CoordinatorProcess, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    epoch = _register(coordinator, participants)
    writer = _writer(coordinator, epoch, tmp_path)
    writer.commit(_stage(tmp_path, 0, epoch), 0)
    for sink in participants.sinks.values():
        assert sink.wait_for("committed", TransactionId(JOB, 0))
    # a restarted driver re-runs the batch (new files, new epoch): the coordinator answers COMMITTED
    again = _register(coordinator, participants)
    _writer(coordinator, again, tmp_path).commit(_stage(tmp_path, 0, again), 0)
    assert all(sink.count("prepare", TransactionId(JOB, 0)) == 1 for sink in participants.sinks.values())


def test_a_batch_without_rows_commits_nothing_and_the_next_batch_commits(
    coordinator: CoordinatorProcess, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    """A batch whose tasks staged nothing is not a transaction: no participant is prepared, nothing is
    staged for it, the coordinator has no record of it; the next batch with rows commits as usual."""
    epoch = _register(coordinator, participants)
    writer = _writer(coordinator, epoch, tmp_path)
    empty: list[WriterCommitMessage | None] = [StagedFileMessage(None, 0, 0), StagedFileMessage(None, 1, 1), None]
    writer.commit(empty, 0)
    assert not (tmp_path / JOB / "0").exists()
    writer.commit(_stage(tmp_path, 1, epoch), 1)
    for sink in participants.sinks.values():
        assert sink.wait_for("committed", TransactionId(JOB, 1))
        assert sink.count("prepare", TransactionId(JOB, 0)) == 0
    with CoordinatorClient(coordinator.target) as client:
        assert client.get_transaction(TransactionId(JOB, 0)).state is TransactionState.ABORTED  # no record
        assert client.get_transaction(TransactionId(JOB, 1)).state is TransactionState.COMMITTED


def test_an_empty_batch_of_a_fenced_driver_is_fenced_and_an_empty_replay_of_a_committed_batch_commits(
    coordinator: CoordinatorProcess, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    """The empty batch's AbortTransaction checks the epoch: a fenced driver stops at a batch without
    rows too. A replay that finds no row where an earlier driver committed some answers COMMITTED."""
    old = _register(coordinator, participants)
    _writer(coordinator, old, tmp_path).commit(_stage(tmp_path, 0, old), 0)
    new = _register(coordinator, participants)
    empty: list[WriterCommitMessage | None] = [StagedFileMessage(None, 0, 0)]
    with pytest.raises(WriterFencedError, match="another driver owns the job"):
        _writer(coordinator, old, tmp_path).commit(empty, 1)
    _writer(coordinator, new, tmp_path).commit(empty, 0)  # batch 0 is committed: the replay succeeds
    assert all(sink.count("prepare", TransactionId(JOB, 0)) == 1 for sink in participants.sinks.values())
    with CoordinatorClient(coordinator.target) as client:
        assert client.get_transaction(TransactionId(JOB, 0)).state is TransactionState.COMMITTED


def test_a_batch_with_an_empty_derived_output_commits_an_empty_file(
    coordinator: CoordinatorProcess, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    """A derived output's manifest is in the batch's directory even when it lists no file: such a
    batch still commits (one empty file from the driver), so the coordinator collects the directory."""
    epoch = _register(coordinator, participants)
    options = SinkOptions(JOB, coordinator.target, epoch, str(tmp_path), rpc_timeout_s=30, derived_outputs=("errors",))
    StagingWriter(str(tmp_path), JOB, 0).write_manifest(manifest_name("errors", epoch), [])
    TwoPhaseCommitWriter(options, IP_COUNT_ARROW_SCHEMA).commit([StagedFileMessage(None, 0, 0)], 0)
    for sink in participants.sinks.values():
        assert sink.wait_for("committed", TransactionId(JOB, 0))


def test_a_no_vote_aborts_the_batch_and_spark_gets_an_error(
    coordinator: CoordinatorProcess, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    epoch = _register(coordinator, participants)
    participants.sinks["sqlite"].vote_no = "disk full"
    writer = _writer(coordinator, epoch, tmp_path)
    with pytest.raises(TransactionAborted, match="disk full"):
        writer.commit(_stage(tmp_path, 0, epoch), 0)
    writer.abort(_stage(tmp_path, 0, epoch), 0)  # Spark calls abort after a failed commit: harmless
    participants.sinks["sqlite"].vote_no = None
    writer.commit(_stage(tmp_path, 0, epoch), 0)  # the re-run of the batch commits
    assert participants.sinks["kafka"].wait_for("committed", TransactionId(JOB, 0))


def test_an_older_driver_is_fenced_with_an_error_that_says_who_owns_the_job(
    coordinator: CoordinatorProcess, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    old = _register(coordinator, participants)
    _register(coordinator, participants)  # a second driver of the same job
    with pytest.raises(WriterFencedError, match="another driver owns the job"):
        _writer(coordinator, old, tmp_path).commit(_stage(tmp_path, 0, old), 0)


def test_register_driver_fences_the_last_driver_and_says_why_it_cannot_start(
    coordinator: CoordinatorProcess, participants: FakeParticipantServer
) -> None:
    sinks = [{"sink": r.sink, "target": r.target} for r in participants.refs]

    def settings(target: str, register_timeout_ms: int) -> SparkJobSettings:
        coordinator = {"target": target, "register_timeout_ms": register_timeout_ms}
        return SparkJobSettings.model_validate(
            {
                "job": JOB,
                "entrypoint": ENTRYPOINT,
                "outputs": results_outputs(["sqlite"], ["kafka"]),
                "coordinator": coordinator,
                "participants": sinks,
            }
        )

    refs = [ParticipantRef(r.sink, r.target) for r in participants.refs]
    first = register_driver(settings(coordinator.target, 20_000))  # the participants of the settings
    second = register_driver(settings(coordinator.target, 20_000), refs)
    assert (second.epoch, second.last_committed_batch) == (first.epoch + 1, -1)
    participants.sinks["sqlite"].refuse_bindings = "column ip is an INTEGER"
    bound = [ParticipantRef(r.sink, r.target, (SinkBinding(r.sink, table="hits", mode=SinkMode.APPEND),)) for r in refs]
    with pytest.raises(JobDefinitionError, match="column ip is an INTEGER"):
        register_driver(settings(coordinator.target, 20_000), bound)
    with pytest.raises(
        CoordinatorUnavailable, match=r"RegisterWriter for job .* UNAVAILABLE: .*coordinator 127\.0\.0\.1:1\)"
    ):
        register_driver(settings("127.0.0.1:1", 500), refs)


def test_a_driver_fenced_while_its_batch_prepares_is_fenced_not_restarted(
    coordinator: CoordinatorProcess, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    """The race of the fencing test: the second driver registers while the first one's batch prepares.
    The first must get the fencing error (so the restart loop stops), not a plain abort (re-run)."""
    old = _register(coordinator, participants)
    participants.sinks["kafka"].prepare_delay = 2.0
    errors: list[BaseException] = []

    def commit() -> None:
        try:
            _writer(coordinator, old, tmp_path).commit(_stage(tmp_path, 0, old), 0)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=commit)
    thread.start()
    deadline = time.monotonic() + 30
    while participants.sinks["kafka"].count("prepare", TransactionId(JOB, 0)) == 0:
        assert time.monotonic() < deadline, "the batch never reached prepare"
        time.sleep(0.05)
    _register(coordinator, participants)
    thread.join(30)
    assert len(errors) == 1 and isinstance(errors[0], WriterFencedError), errors
    assert "another driver owns the job" in str(errors[0])


def test_commit_rides_out_a_coordinator_restart(
    broker: EmbeddedBroker, participants: FakeParticipantServer, tmp_path: Path
) -> None:
    """CommitTransaction is idempotent, so the sink retries it while the coordinator is unreachable."""
    coordinator = CoordinatorProcess(
        tmp_path / "coordinator",
        {"kafka": {"bootstrap_servers": broker.bootstrap_servers}, "prepare_timeout_ms": 5000},
    )
    coordinator.start()
    try:
        epoch = _register(coordinator, participants)
        messages = _stage(tmp_path, 0, epoch)
        coordinator.kill()
        errors: list[BaseException] = []

        def commit() -> None:
            try:
                _writer(coordinator, epoch, tmp_path).commit(messages, 0)
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=commit)
        thread.start()
        time.sleep(2)
        assert thread.is_alive(), f"commit gave up while the coordinator was down: {errors}"
        coordinator.start()  # same port; the Kafka log brings back the job and its writer epoch
        thread.join(60)
        assert not thread.is_alive() and not errors, errors
        assert participants.sinks["kafka"].wait_for("committed", TransactionId(JOB, 0))
    finally:
        coordinator.stop()


def test_the_commit_sends_the_token_of_the_sink_options(participants: FakeParticipantServer, tmp_path: Path) -> None:
    token = tmp_path / "grpc_token"
    token.write_text("s3cret\n")
    process = CoordinatorProcess(
        tmp_path / "coordinator",
        {
            "transaction_log": {"backend": "memory"},
            "prepare_timeout_ms": 5000,
            "server": {"auth": {"token_file": str(token)}},
        },
    )
    process.start()
    try:
        with CoordinatorClient(process.target, TlsSettings(token_file=str(token))) as client:
            epoch = client.register_writer(JOB, "test-driver").epoch
            client.register_participants(JOB, epoch, [ParticipantRef(r.sink, r.target) for r in participants.refs])
        options = {"job": JOB, "coordinator": process.target, "writerEpoch": str(epoch), "stagingRoot": str(tmp_path)}
        without = TwoPhaseCommitWriter(parse_sink_options(options), IP_COUNT_ARROW_SCHEMA)
        with pytest.raises(Exception, match="UNAUTHENTICATED"):
            without.commit(_stage(tmp_path, 0, epoch), 0)
        with_token = parse_sink_options({**options, "tls.token_file": str(token)})
        assert with_token.tls.token_file == str(token)
        TwoPhaseCommitWriter(with_token, IP_COUNT_ARROW_SCHEMA).commit(_stage(tmp_path, 1, epoch), 1)
        for sink in participants.sinks.values():
            assert sink.wait_for("committed", TransactionId(JOB, 1))
    finally:
        process.stop()
