"""The contract's sink bindings, output schemas, transaction states and clients: validation, and their
JSON and proto forms."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import grpc
import pyarrow as pa
import pytest

from onceflow.contract import (
    WHOLE_SINK,
    CommittedBatches,
    HostedCommits,
    InvalidBinding,
    ParticipantVote,
    Resolution,
    Shard,
    SinkBinding,
    SinkMode,
    TransactionId,
    TransactionOutcome,
    TransactionReport,
    TransactionState,
    UnsupportedColumnType,
    ValueFormat,
    check_supported,
    schema_from_bytes,
    schema_to_bytes,
)
from onceflow.contract.clients import ClientClosed, CoordinatorClient, ParticipantClient, RpcFailed, ServiceClient
from onceflow.contract.clients import base as client_base
from onceflow.contract.connect import ConnectorOffset
from onceflow.contract.proto import (
    binding_from_proto,
    binding_to_proto,
    connector_state_from_proto,
    file_from_proto,
    file_to_proto,
    hosted_commits_from_proto,
    hosted_commits_to_proto,
    offset_from_proto,
    offset_to_proto,
    outcome_from_proto,
    report_from_proto,
    report_to_proto,
    resolution_from_proto,
    resolution_to_proto,
    state_from_proto,
    state_to_proto,
    txn_id_from_proto,
    txn_id_to_proto,
    work_state_to_proto,
)
from onceflow.contract.staging import StagedFile
from onceflow.core.settings import TlsSettings
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA, ip_count_table_binding, ip_count_topic_binding
from onceflow.proto.v1 import common_pb2, connect_pb2, coordinator_pb2

WIDE = pa.schema(
    [
        pa.field("s", pa.string(), nullable=False),
        pa.field("i8", pa.int8()),
        pa.field("i64", pa.int64()),
        pa.field("f", pa.float64()),
        pa.field("d", pa.decimal128(12, 3)),
        pa.field("b", pa.bool_()),
        pa.field("raw", pa.binary()),
        pa.field("day", pa.date32()),
        pa.field("at", pa.timestamp("us", tz="UTC")),
        pa.field("ntz", pa.timestamp("us")),
    ]
)


@pytest.mark.parametrize("binding", [ip_count_table_binding("sqlite"), ip_count_topic_binding("kafka")])
def test_bindings_round_trip_through_json_and_proto_with_their_schema(binding: SinkBinding) -> None:
    for again in (SinkBinding.from_json(binding.to_json()), binding_from_proto(binding_to_proto(binding))):
        assert again == binding
        assert again.schema == IP_COUNT_ARROW_SCHEMA


def test_every_supported_type_passes_and_the_schema_survives_its_bytes() -> None:
    check_supported("wide", WIDE)
    assert schema_from_bytes(schema_to_bytes(WIDE)) == WIDE


@pytest.mark.parametrize(
    "data_type", [pa.list_(pa.int64()), pa.struct([("a", pa.int32())]), pa.map_(pa.string(), pa.int64()), pa.null()]
)
def test_an_unsupported_type_names_output_column_and_type(data_type: pa.DataType) -> None:
    schema = pa.schema([pa.field("ok", pa.string()), pa.field("tags", data_type)])
    with pytest.raises(UnsupportedColumnType, match=r"output 'events': column 'tags' has type") as info:
        check_supported("events", schema)
    assert info.value.column == "tags"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"table": "t", "mode": SinkMode.UPSERT}, "mode upsert needs key columns"),
        ({"table": "bad name"}, "table 'bad name' must match"),
        ({"topic": "no/slash"}, "not a valid Kafka topic name"),
        ({"table": "t", "topic": "x"}, "not both"),
        ({"table": "t", "keys": ("nope",), "schema": WIDE}, r"key column\(s\) nope are not in output"),
        ({"topic": "x", "record_name": "1bad"}, "not an Avro full name"),
    ],
)
def test_a_bad_binding_names_the_field(fields: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidBinding, match=message):
        SinkBinding(sink="db", **fields)  # type: ignore[arg-type]


def test_bad_proto_values_are_refused_with_the_field_named() -> None:
    message = binding_to_proto(SinkBinding(sink="db", table="t", mode=SinkMode.APPEND))
    message.mode = "merge"
    with pytest.raises(ValueError, match="binding mode 'merge' must be one of upsert, append"):
        binding_from_proto(message)
    message.mode = "append"
    message.value_format = "xml"
    with pytest.raises(ValueError, match="value_format 'xml'"):
        binding_from_proto(message)
    message.value_format = ""
    message.arrow_schema = b"garbage"
    with pytest.raises(ValueError, match="not an Arrow IPC schema"):
        binding_from_proto(message)


def test_staged_files_keep_their_output_through_proto() -> None:
    file = StagedFile("file:///s/j/1/side-dead_letters-part-00000.arrow", 3, "ab" * 32, output="dead_letters")
    assert file_from_proto(file_to_proto(file)) == file
    default = StagedFile("file:///s/j/1/part-0.arrow", 1, "cd" * 32)
    assert file_to_proto(default).output == ""  # old readers see what they always saw
    assert file_from_proto(file_to_proto(default)) == default


def test_append_bindings_need_no_key_and_formats_are_explicit() -> None:
    binding = SinkBinding(
        sink="kafka", output="errors", topic="errors", mode=SinkMode.APPEND, value_format=ValueFormat.JSON
    )
    assert binding.describe() == "errors -> kafka/errors"


def test_one_transaction_id_for_every_process() -> None:
    txn = TransactionId.parse("team:ip-count:42")
    assert (txn.job, txn.batch, str(txn)) == ("team:ip-count", 42, "team:ip-count:42")
    assert sorted([TransactionId("b", 1), TransactionId("a", 2), TransactionId("a", 10)])[0] == TransactionId("a", 2)
    for text in ("ipcount", "ipcount:", "ipcount:-1", "ipcount:x", ":3"):
        with pytest.raises(ValueError, match=r"JOB:BATCH|must not be empty"):
            TransactionId.parse(text)
    with pytest.raises(ValueError, match="batch must be >= 0, got -1"):
        TransactionId("ipcount", -1)


def test_transaction_ids_states_and_resolutions_round_trip_through_proto() -> None:
    txn = TransactionId("job:with:colons", 3)
    assert txn_id_from_proto(txn_id_to_proto(txn)) == txn
    for state in TransactionState:
        assert state_from_proto(state_to_proto(state)) is state
    assert state_from_proto(common_pb2.TRANSACTION_STATE_UNSPECIFIED) is None
    with pytest.raises(ValueError, match="42 is not a transaction state"):
        state_from_proto(42)
    for resolution in Resolution:
        assert resolution_from_proto(resolution_to_proto(resolution)) is resolution
    with pytest.raises(ValueError, match="RESOLUTION_COMMIT or RESOLUTION_ABORT"):
        resolution_from_proto(coordinator_pb2.RESOLUTION_UNSPECIFIED)
    assert [s.value for s in TransactionState if not s.is_final] == ["PREPARING", "COMMITTING", "ABORTING"]
    assert [s.value for s in TransactionState if s.is_commit] == ["COMMITTING", "COMMITTED"]


def test_the_coordinators_reports_and_outcomes_round_trip_through_proto() -> None:
    report = TransactionReport(
        id=TransactionId("ipcount", 7),
        state=TransactionState.ABORTED,
        writer_epoch=3,
        files=(StagedFile("file:///s/part-0", 5, "a" * 64), StagedFile("file:///s/e-0", 2, "b" * 64, "errors")),
        votes=(ParticipantVote("kafka", prepared=True), ParticipantVote("sqlite#1", error="disk full")),
        started_at=1_700_000_000.25,
        updated_at=1_700_000_001.5,
        reason="participant 'sqlite#1' voted no: disk full",
    )
    assert report_from_proto(report_to_proto(report)) == report
    assert report.rows == 7
    # a time since 1970 comes back as the same float, to the last bit (time.time() is such a float);
    # 1709071301.334387 is one that a float product (seconds * 1e9) gets wrong
    for seconds in (1_709_071_301.334387, 1_700_000_000.123456789, 4_102_444_800.999999):
        timed = dataclasses.replace(report, started_at=seconds, updated_at=math.nextafter(seconds, math.inf))
        assert report_from_proto(report_to_proto(timed)) == timed, seconds
    stamp = report_to_proto(dataclasses.replace(report, started_at=1_700_000_000.25)).started_at
    assert (stamp.seconds, stamp.nanos) == (1_700_000_000, 250_000_000)
    unset = TransactionReport(TransactionId("ipcount", 0), TransactionState.COMMITTED)
    assert report_to_proto(unset).started_at.ToNanoseconds() == 0
    assert report_from_proto(report_to_proto(unset)) == unset
    # a transaction the coordinator does not know (no state): presumed abort
    assert (
        report_from_proto(coordinator_pb2.Transaction(id=txn_id_to_proto(unset.id))).state is TransactionState.ABORTED
    )
    assert outcome_from_proto(common_pb2.TRANSACTION_STATE_COMMITTING) == TransactionOutcome(
        TransactionState.COMMITTING
    )
    assert outcome_from_proto(common_pb2.TRANSACTION_STATE_ABORTED, "no") == TransactionOutcome(
        TransactionState.ABORTED, "no"
    )


def test_the_sinks_commit_records_round_trip_through_proto() -> None:
    hosted = [
        HostedCommits("kafka", Shard(1, 3), (CommittedBatches("a", 9, (9,), cumulative=True),)),
        HostedCommits("lake"),
        HostedCommits("sqlite", WHOLE_SINK, (CommittedBatches("a", 4, (4, 2)), CommittedBatches("b", 0, (0,)))),
    ]
    assert hosted_commits_from_proto(hosted_commits_to_proto(hosted)) == hosted
    assert [h.last_batch("a") for h in hosted] == [9, -1, 4]


@pytest.mark.parametrize("client_class", [CoordinatorClient, ParticipantClient])
def test_a_client_refuses_an_empty_target_and_a_bad_deadline(client_class: type[ServiceClient[Any]]) -> None:
    with pytest.raises(ValueError, match="target must be HOST:PORT"):
        client_class("")
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
            client_class("127.0.0.1:1", timeout_s=bad)
    with client_class("127.0.0.1:1", timeout_s=2) as client:
        assert client.target == "127.0.0.1:1" and client.timeout_s == 2.0


def test_a_call_on_a_closed_client_is_an_error_not_a_crash(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("secret")
    # With a bearer token the channel is intercepted: grpcio crashes the process on a call on it once closed.
    for tls in (None, TlsSettings(token_file=str(token))):
        coordinator = CoordinatorClient("127.0.0.1:1,127.0.0.1:2", tls)
        participant = ParticipantClient("127.0.0.1:1", tls)
        coordinator.close()
        participant.close()
        closed = r"GetTransaction: the client of 127\.0\.0\.1:1,127\.0\.0\.1:2 is closed"
        with pytest.raises(ClientClosed, match=closed):
            coordinator.get_transaction(TransactionId("job", 0), timeout_s=1)
        with pytest.raises(ClientClosed, match="is closed"):
            participant.list_prepared_transactions(timeout_s=1)


def test_a_shared_client_is_one_per_process_until_a_file_it_reads_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = tmp_path / "token"
    token.write_text("first")
    tls = TlsSettings(token_file=str(token))
    first = CoordinatorClient.shared("127.0.0.1:1", tls)
    assert CoordinatorClient.shared("127.0.0.1:1", tls) is first
    assert ParticipantClient.shared("127.0.0.1:1", tls) is not first  # type: ignore[comparison-overlap] # one per class
    assert CoordinatorClient.shared("127.0.0.1:2", tls) is not first  # and per target
    # A rotated token opens a new channel (the old one sends the old token); the replaced client
    # stays open for a caller that still holds it.
    token.write_text("rotated!")
    second = CoordinatorClient.shared("127.0.0.1:1", tls)
    assert second is not first
    assert CoordinatorClient.shared("127.0.0.1:1", tls) is second
    # A forked child never uses its parent's channel, nor lets it be torn down.
    monkeypatch.setattr("onceflow.contract.clients.base._process_id", lambda: -1)
    assert CoordinatorClient.shared("127.0.0.1:1", tls) is not second
    assert any(inherited is second for inherited in client_base._inherited)
    for held in (first, second):  # still open: the call reaches the network (nothing listens)
        with pytest.raises(RpcFailed) as failed:
            held.get_transaction(TransactionId("job", 0), timeout_s=1)
        assert failed.value.code() in {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}


def test_the_connect_answers_convert_from_proto_as_the_rest_api_spells_them() -> None:
    offset = ConnectorOffset(partition={"file": "/logs/a.log"}, offset={"lines": 41, "ratio": 0.5})
    assert offset_from_proto(offset_to_proto(offset)) == offset  # whole numbers come back as ints
    reset = ConnectorOffset(partition={"counter": 0})
    assert offset_from_proto(offset_to_proto(reset)) == reset
    status = connector_state_from_proto(
        connect_pb2.ConnectorStatus(
            name="c",
            state=connect_pb2.WORK_STATE_RUNNING,
            worker_id="w1",
            type=connect_pb2.CONNECTOR_TYPE_SOURCE,
            tasks=[connect_pb2.TaskStatus(id=0, state=connect_pb2.WORK_STATE_FAILED, trace="boom")],
        )
    )
    assert (status.state, status.type, status.tasks[0].state, status.tasks[0].trace) == (
        "RUNNING",
        "source",
        "FAILED",
        "boom",
    )
    assert work_state_to_proto("paused") == connect_pb2.WORK_STATE_PAUSED
    with pytest.raises(ValueError, match=r"unknown connector state 'asleep'.*RUNNING"):
        work_state_to_proto("asleep")


def test_a_transaction_ids_log_fields_are_the_id_its_job_and_its_batch() -> None:
    from onceflow.contract import TransactionId

    txn = TransactionId("ip:count", 42)
    assert txn.log_fields() == {"txn": txn, "job": "ip:count", "batch": 42}
    assert str(txn.log_fields()["txn"]) == "ip:count:42"
