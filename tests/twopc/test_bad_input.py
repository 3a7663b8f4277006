"""Bad input: a corrupt staged file aborts with a reason naming it; bad RPC arguments and unknown jobs
are rejected with INVALID_ARGUMENT and NOT_FOUND, and a message saying what is wrong."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from onceflow.contract.staging import StagedFile
from onceflow.proto.v1 import common_pb2, coordinator_pb2
from onceflow.testing.coordinator.cluster import SINKS, TwoPhaseCommitCluster

from .conftest import ClusterFactory
from .driver import ABORTED, COMMITTED, JOB, NOTHING_PREPARED, batch_rows, expected_rows


def _flip_a_byte(file: StagedFile) -> StagedFile:
    path = Path(file.uri.removeprefix("file://"))
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    return file


def _delete(file: StagedFile) -> StagedFile:
    Path(file.uri.removeprefix("file://")).unlink()
    return file


def _claim_more_rows(file: StagedFile) -> StagedFile:
    return StagedFile(file.uri, file.count + 1, file.sha256)


CORRUPTIONS: dict[str, tuple[Callable[[StagedFile], StagedFile], str]] = {
    "checksum": (_flip_a_byte, "has sha256"),
    "missing": (_delete, "does not exist"),
    "truncated": (_claim_more_rows, "rows, expected"),
}


def test_a_corrupt_staged_file_aborts_the_batch_naming_the_file(cluster: TwoPhaseCommitCluster) -> None:
    """Steps, for a flipped byte, a missing file and a file holding fewer rows than reported:
    1. Stage batch N as two files and damage the second one.
    2. CommitTransaction answers ABORTED; the reason names every participant, its no vote, and
       the damaged file's URI.
    3. Nothing is prepared or written in any sink.
    4. The driver re-runs the batch (a new task attempt stages it again): it commits.
    """
    epoch = cluster.register(JOB)
    for batch, (kind, (damage, symptom)) in enumerate(CORRUPTIONS.items()):
        # Step 1
        rows = batch_rows(batch)
        good, bad = cluster.stage(JOB, batch, rows[:5], rows[5:])
        bad = damage(bad)
        # Step 2
        response = cluster.commit(JOB, epoch, batch, [good, bad])
        assert response.state == ABORTED, kind
        for sink in SINKS:
            assert f"participant {sink!r} voted no: staged file {bad.uri} " in response.reason, (kind, response.reason)
        assert symptom in response.reason, kind
        assert good.uri not in response.reason
        # Step 3
        assert cluster.prepared() == NOTHING_PREPARED
        # Step 4
        retried = cluster.stage(JOB, batch, rows[:5], rows[5:], attempt=1)
        assert cluster.commit(JOB, epoch, batch, retried).state == COMMITTED, kind
    expected = expected_rows(batch_rows(batch) for batch in range(len(CORRUPTIONS)))
    assert cluster.sink_rows() == {sink: expected for sink in SINKS}


def _code_and_details(call: Callable[..., Any], request: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as failed:
        call(request, timeout=10)
    return failed.value.code(), failed.value.details() or ""


SHA = "ab" * 32


def _file(
    uri: str = "file:///staging/ipcount/0/part-0.avro", count: int = 1, sha256: str = SHA
) -> common_pb2.StagedFile:
    return common_pb2.StagedFile(uri=uri, count=count, sha256=sha256)


def test_invalid_arguments_and_unknown_jobs_are_rejected_with_a_message(cluster_factory: ClusterFactory) -> None:
    """Every RPC checks its arguments before doing anything: a malformed one is INVALID_ARGUMENT
    naming the field; a job that never registered a writer is NOT_FOUND naming the job."""
    cluster = cluster_factory(sinks=["sqlite"])
    stub = cluster.stub
    epoch = cluster.register(JOB)
    commit = coordinator_pb2.CommitTransactionRequest
    invalid: list[tuple[Callable[..., Any], Any, str]] = [
        (stub.RegisterWriter, coordinator_pb2.RegisterWriterRequest(job=""), "job: must not be empty"),
        (stub.RegisterWriter, coordinator_pb2.RegisterWriterRequest(job="a:b"), "is not a job name"),
        (stub.RegisterWriter, coordinator_pb2.RegisterWriterRequest(job="job"), "is reserved"),
        (
            stub.RegisterParticipants,
            coordinator_pb2.RegisterParticipantsRequest(job=JOB, writer_epoch=epoch),
            "participants: a job needs at least one participant",
        ),
        (
            stub.RegisterParticipants,
            coordinator_pb2.RegisterParticipantsRequest(
                job=JOB, writer_epoch=epoch, participants=[coordinator_pb2.ParticipantRef(sink="s", target="")]
            ),
            "participants[0].target",
        ),
        (stub.CommitTransaction, commit(job=JOB, writer_epoch=epoch, batch=-1, files=[_file()]), "batch: must be >= 0"),
        (
            stub.CommitTransaction,
            commit(job=JOB, writer_epoch=0, batch=0, files=[_file()]),
            "writer_epoch: must be > 0",
        ),
        (stub.CommitTransaction, commit(job=JOB, writer_epoch=epoch, batch=0, files=[_file(uri="")]), "files[0].uri"),
        (
            stub.CommitTransaction,
            commit(job=JOB, writer_epoch=epoch, batch=0, files=[_file(count=-1)]),
            "files[0].count: must be >= 0",
        ),
        (
            stub.CommitTransaction,
            commit(job=JOB, writer_epoch=epoch, batch=0, files=[_file(sha256="xyz")]),
            "files[0].sha256: must be 64 hex characters",
        ),
        (
            stub.CommitTransaction,
            commit(job=JOB, writer_epoch=epoch, batch=0, files=[_file(), _file()]),
            "files[1].uri: 'file:///staging/ipcount/0/part-0.avro' is listed twice",
        ),
        (stub.GetTransaction, coordinator_pb2.GetTransactionRequest(job="", batch=0), "job: must not be empty"),
        (stub.ListTransactions, coordinator_pb2.ListTransactionsRequest(limit=-1), "limit: must be >= 0"),
        (
            stub.ResolveTransaction,
            coordinator_pb2.ResolveTransactionRequest(job=JOB, batch=0),
            "resolution: must be RESOLUTION_COMMIT or RESOLUTION_ABORT",
        ),
    ]
    for call, request, message in invalid:
        code, details = _code_and_details(call, request)
        assert (code, message in details) == (grpc.StatusCode.INVALID_ARGUMENT, True), (request, details)

    unknown = "never-registered"
    not_found: list[tuple[Callable[..., Any], Any]] = [
        (stub.CommitTransaction, commit(job=unknown, writer_epoch=1, batch=0, files=[_file()])),
        (stub.AbortTransaction, coordinator_pb2.AbortTransactionRequest(job=unknown, writer_epoch=1, batch=0)),
        (
            stub.RegisterParticipants,
            coordinator_pb2.RegisterParticipantsRequest(
                job=unknown, writer_epoch=1, participants=[coordinator_pb2.ParticipantRef(sink="s", target="t:1")]
            ),
        ),
        (
            stub.ResolveTransaction,
            coordinator_pb2.ResolveTransactionRequest(
                job=unknown, batch=0, resolution=coordinator_pb2.RESOLUTION_ABORT
            ),
        ),
    ]
    for call, request in not_found:
        code, details = _code_and_details(call, request)
        assert code == grpc.StatusCode.NOT_FOUND, (request, code, details)
        assert f"unknown job {unknown!r}" in details, details
    # nothing was logged for the rejected calls: the registered job is as it was
    assert cluster.commit(JOB, epoch, 0, cluster.stage(JOB, 0, batch_rows(0))).state == COMMITTED
