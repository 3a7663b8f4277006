"""The contract's values to and from their ``onceflow.v1`` messages: one conversion for every service
(bindings, staged files, transaction ids, transaction states, resolutions, shards, the coordinator's
reports and outcomes, the sinks' commit records, the Results API's answers, the connect worker's admin
answers)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, Final, cast

from google.protobuf import json_format, struct_pb2
from google.protobuf.timestamp_pb2 import Timestamp

from onceflow.contract.bindings import DEFAULT_OUTPUT, SinkBinding, SinkMode, ValueFormat
from onceflow.contract.commits import CommittedBatches, HostedCommits
from onceflow.contract.connect import (
    ConfigValidation,
    ConfigValidationResult,
    ConnectorInfo,
    ConnectorListing,
    ConnectorOffset,
    ConnectorStateInfo,
    PluginInfo,
    TaskStateInfo,
)
from onceflow.contract.report import ParticipantVote, TransactionOutcome, TransactionReport
from onceflow.contract.results import (
    AuditSummary,
    CountMismatch,
    GeneratorTruth,
    IpCount,
    IpCountsUpdate,
    RowsPage,
    RowsUpdate,
    SinkAuditSummary,
    SourceTopicTruth,
    TableColumn,
    TableDescription,
    TopIpCounts,
)
from onceflow.contract.schema import schema_from_bytes, schema_to_bytes
from onceflow.contract.shards import Shard
from onceflow.contract.staging.files import StagedFile
from onceflow.contract.state import Resolution, TransactionState
from onceflow.contract.txn import TransactionId
from onceflow.proto.v1 import common_pb2, connect_pb2, coordinator_pb2, participant_pb2, results_pb2

_NANOS_PER_SECOND: Final = 1_000_000_000


def binding_to_proto(binding: SinkBinding) -> common_pb2.SinkBinding:
    return common_pb2.SinkBinding(
        sink=binding.sink,
        output=binding.output,
        table=binding.table,
        topic=binding.topic,
        mode=binding.mode.value,
        keys=list(binding.keys),
        value_format=binding.value_format.value,
        headers=list(binding.headers),
        record_name=binding.record_name,
        arrow_schema=schema_to_bytes(binding.schema) if binding.schema is not None else b"",
    )


def binding_from_proto(message: common_pb2.SinkBinding) -> SinkBinding:
    """A :class:`SinkBinding`; ValueError (an ``InvalidBinding``) names the field that is wrong."""
    try:
        mode = SinkMode(message.mode or SinkMode.UPSERT)
    except ValueError:
        raise ValueError(f"binding mode {message.mode!r} must be one of {', '.join(SinkMode)}") from None
    try:
        value_format = ValueFormat(message.value_format or ValueFormat.AVRO)
    except ValueError:
        raise ValueError(
            f"binding value_format {message.value_format!r} must be one of {', '.join(ValueFormat)}"
        ) from None
    schema = schema_from_bytes(message.arrow_schema) if message.arrow_schema else None
    return SinkBinding(
        sink=message.sink,
        output=message.output or DEFAULT_OUTPUT,
        table=message.table,
        topic=message.topic,
        mode=mode,
        keys=tuple(message.keys),
        value_format=value_format,
        headers=tuple(message.headers),
        record_name=message.record_name,
        schema=schema,
    )


def bindings_from_proto(messages: Iterable[common_pb2.SinkBinding]) -> list[SinkBinding]:
    return [binding_from_proto(m) for m in messages]


def bindings_to_proto(bindings: Iterable[SinkBinding]) -> list[common_pb2.SinkBinding]:
    return [binding_to_proto(b) for b in bindings]


def file_to_proto(file: StagedFile) -> common_pb2.StagedFile:
    output = "" if file.output == DEFAULT_OUTPUT else file.output
    return common_pb2.StagedFile(uri=file.uri, count=file.count, sha256=file.sha256, output=output)


def file_from_proto(message: common_pb2.StagedFile) -> StagedFile:
    return StagedFile(
        uri=message.uri, count=message.count, sha256=message.sha256, output=message.output or DEFAULT_OUTPUT
    )


def files_to_proto(files: Iterable[StagedFile]) -> list[common_pb2.StagedFile]:
    return [file_to_proto(f) for f in files]


def files_from_proto(messages: Iterable[common_pb2.StagedFile]) -> list[StagedFile]:
    return [file_from_proto(m) for m in messages]


def shard_to_proto(shard: Shard) -> common_pb2.Shard | None:
    """The ``shard`` field of a request or participant ref: None (left unset) for an unsharded sink."""
    return common_pb2.Shard(index=shard.index, count=shard.count) if shard.is_sharded else None


def shard_from_proto(message: common_pb2.Shard | None) -> Shard:
    """The shard a request or ref names (unset, or a count of 0: the whole sink); ValueError for an
    index or count out of range."""
    if message is None or message.count == 0:
        if message is not None and message.index:
            raise ValueError(f"shard index {message.index} without a shard count")
        return Shard()
    return Shard(message.index, message.count)


def txn_id_to_proto(txn: TransactionId) -> common_pb2.TransactionId:
    return common_pb2.TransactionId(job=txn.job, batch=txn.batch)


def txn_id_from_proto(message: common_pb2.TransactionId) -> TransactionId:
    """A :class:`TransactionId`; ValueError for an empty job or a negative batch."""
    return TransactionId(message.job, message.batch)


_STATE_TO_PROTO: Final[dict[TransactionState, common_pb2.TransactionState]] = {
    TransactionState.PREPARING: common_pb2.TRANSACTION_STATE_PREPARING,
    TransactionState.COMMITTING: common_pb2.TRANSACTION_STATE_COMMITTING,
    TransactionState.COMMITTED: common_pb2.TRANSACTION_STATE_COMMITTED,
    TransactionState.ABORTING: common_pb2.TRANSACTION_STATE_ABORTING,
    TransactionState.ABORTED: common_pb2.TRANSACTION_STATE_ABORTED,
}
_STATE_FROM_PROTO: Final[dict[int, TransactionState]] = {int(v): k for k, v in _STATE_TO_PROTO.items()}
_RESOLUTION_TO_PROTO: Final[dict[Resolution, coordinator_pb2.Resolution]] = {
    Resolution.COMMIT: coordinator_pb2.RESOLUTION_COMMIT,
    Resolution.ABORT: coordinator_pb2.RESOLUTION_ABORT,
}
_RESOLUTION_FROM_PROTO: Final[dict[int, Resolution]] = {int(v): k for k, v in _RESOLUTION_TO_PROTO.items()}


def state_to_proto(state: TransactionState) -> common_pb2.TransactionState:
    return _STATE_TO_PROTO[state]


def state_from_proto(value: int) -> TransactionState | None:
    """The state of a ``TransactionState`` value; None for UNSPECIFIED (a transaction nobody knows:
    presumed abort). ValueError for a value that is not a state."""
    if value == common_pb2.TRANSACTION_STATE_UNSPECIFIED:
        return None
    try:
        return _STATE_FROM_PROTO[value]
    except KeyError:
        raise ValueError(f"{value} is not a transaction state") from None


def resolution_to_proto(resolution: Resolution) -> coordinator_pb2.Resolution:
    return _RESOLUTION_TO_PROTO[resolution]


def resolution_from_proto(value: int) -> Resolution:
    """ValueError for RESOLUTION_UNSPECIFIED or a value that is not a resolution."""
    try:
        return _RESOLUTION_FROM_PROTO[value]
    except KeyError:
        raise ValueError("must be RESOLUTION_COMMIT or RESOLUTION_ABORT") from None


def _reported_state(value: int) -> TransactionState:
    """The state of an answer; UNSPECIFIED (a transaction the coordinator does not know) is presumed aborted."""
    return state_from_proto(value) or TransactionState.ABORTED


def outcome_from_proto(state: int, reason: str = "") -> TransactionOutcome:
    """The ``state`` (and ``reason``: only CommitTransaction's answer has one) of a Commit-, Abort- or
    ResolveTransactionResponse."""
    return TransactionOutcome(state=_reported_state(state), reason=reason)


def _timestamp_to_proto(seconds: float) -> Timestamp:
    """Seconds since the epoch (0: unknown, left unset), to the nanosecond. The float's exact value is
    scaled (a float product would be off by up to 128 ns at today's epoch), so that
    :func:`_timestamp_from_proto` gives the same float back for any time after February 1970 (from
    there on, floats are coarser than a nanosecond)."""
    stamp = Timestamp()
    if seconds > 0:
        stamp.FromNanoseconds(round(Fraction(seconds) * _NANOS_PER_SECOND))
    return stamp


def _timestamp_from_proto(stamp: Timestamp) -> float:
    """The float nearest to ``stamp`` (an exact integer division, not a float one)."""
    return stamp.ToNanoseconds() / _NANOS_PER_SECOND


def report_to_proto(report: TransactionReport) -> coordinator_pb2.Transaction:
    return coordinator_pb2.Transaction(
        id=txn_id_to_proto(report.id),
        state=state_to_proto(report.state),
        writer_epoch=report.writer_epoch,
        files=files_to_proto(report.files),
        participants=[
            coordinator_pb2.ParticipantVote(
                sink=vote.sink, prepared=vote.prepared, acknowledged=vote.acknowledged, error=vote.error
            )
            for vote in report.votes
        ],
        started_at=_timestamp_to_proto(report.started_at),
        updated_at=_timestamp_to_proto(report.updated_at),
        reason=report.reason,
    )


def report_from_proto(message: coordinator_pb2.Transaction) -> TransactionReport:
    """A :class:`TransactionReport`; ValueError for an id with an empty job or a negative batch."""
    return TransactionReport(
        id=txn_id_from_proto(message.id),
        state=_reported_state(message.state),
        writer_epoch=message.writer_epoch,
        files=tuple(files_from_proto(message.files)),
        votes=tuple(
            ParticipantVote(sink=v.sink, prepared=v.prepared, acknowledged=v.acknowledged, error=v.error)
            for v in message.participants
        ),
        started_at=_timestamp_from_proto(message.started_at),
        updated_at=_timestamp_from_proto(message.updated_at),
        reason=message.reason,
    )


def hosted_commits_to_proto(hosted: Iterable[HostedCommits]) -> participant_pb2.ListCommittedBatchesResponse:
    """ListCommittedBatches' answer: every sink (and its shard), and each sink's commit records per job."""
    sinks = list(hosted)
    return participant_pb2.ListCommittedBatchesResponse(
        jobs=[
            participant_pb2.CommittedBatches(
                sink=sink.sink,
                job=found.job,
                last_batch=found.last_batch,
                batches=found.batches,
                cumulative=found.cumulative,
            )
            for sink in sinks
            for found in sink.jobs
        ],
        sinks=[participant_pb2.HostedSink(sink=sink.sink, shard=shard_to_proto(sink.shard)) for sink in sinks],
    )


def hosted_commits_from_proto(message: participant_pb2.ListCommittedBatchesResponse) -> list[HostedCommits]:
    """One :class:`HostedCommits` per sink the answer names, in its order; ValueError for a shard out of range."""
    jobs: dict[str, list[CommittedBatches]] = {}
    for found in message.jobs:
        jobs.setdefault(found.sink, []).append(
            CommittedBatches(found.job, found.last_batch, tuple(found.batches), found.cumulative)
        )
    return [
        HostedCommits(
            sink=hosted.sink,
            shard=shard_from_proto(hosted.shard if hosted.HasField("shard") else None),
            jobs=tuple(jobs.get(hosted.sink, ())),
        )
        for hosted in message.sinks
    ]


def table_to_proto(table: TableDescription) -> results_pb2.StoredTable:
    columns = [results_pb2.Column(name=c.name, type=c.type, nullable=c.nullable) for c in table.columns]
    return results_pb2.StoredTable(
        table=table.table, topic=table.topic, mode=table.mode, keys=list(table.keys),
        value_format=table.value_format, created=table.created, columns=columns,
    )  # fmt: skip


def table_from_proto(message: results_pb2.StoredTable) -> TableDescription:
    return TableDescription(
        table=message.table, topic=message.topic, mode=message.mode, keys=tuple(message.keys),
        value_format=message.value_format, created=message.created,
        columns=tuple(TableColumn(c.name, c.type, c.nullable) for c in message.columns),
    )  # fmt: skip


def rows_page_to_proto(page: RowsPage) -> results_pb2.ListRowsResponse:
    rows = [results_pb2.Row(json=row) for row in page.rows]
    return results_pb2.ListRowsResponse(rows=rows, next_page_token=page.next_page_token)


def rows_page_from_proto(message: results_pb2.ListRowsResponse) -> RowsPage:
    return RowsPage(rows=tuple(row.json for row in message.rows), next_page_token=message.next_page_token)


def rows_update_to_proto(update: RowsUpdate) -> results_pb2.WatchRowsResponse:
    return results_pb2.WatchRowsResponse(
        rows=[results_pb2.Row(json=row) for row in update.rows], offsets=update.offsets
    )


def rows_update_from_proto(message: results_pb2.WatchRowsResponse) -> RowsUpdate:
    return RowsUpdate(rows=tuple(row.json for row in message.rows), offsets=dict(message.offsets))


def ip_counts_to_proto(counts: Iterable[IpCount]) -> list[results_pb2.IpCount]:
    return [results_pb2.IpCount(window_start_ms=c.window_start_ms, window_end_ms=c.window_end_ms, ip=c.ip,
                                count=c.count) for c in counts]  # fmt: skip


def ip_counts_from_proto(messages: Iterable[results_pb2.IpCount]) -> tuple[IpCount, ...]:
    return tuple(IpCount(m.window_start_ms, m.window_end_ms, m.ip, m.count) for m in messages)


def top_ips_to_proto(top: TopIpCounts) -> results_pb2.GetTopIpsResponse:
    return results_pb2.GetTopIpsResponse(window_start_ms=top.window_start_ms, counts=ip_counts_to_proto(top.counts))


def top_ips_from_proto(message: results_pb2.GetTopIpsResponse) -> TopIpCounts:
    return TopIpCounts(message.window_start_ms, ip_counts_from_proto(message.counts))


def ip_counts_update_to_proto(update: IpCountsUpdate) -> results_pb2.WatchResultsResponse:
    return results_pb2.WatchResultsResponse(counts=ip_counts_to_proto(update.counts), offsets=update.offsets)


def ip_counts_update_from_proto(message: results_pb2.WatchResultsResponse) -> IpCountsUpdate:
    return IpCountsUpdate(ip_counts_from_proto(message.counts), dict(message.offsets))


def audit_request_to_proto(
    truth: GeneratorTruth | SourceTopicTruth, sinks: Iterable[str] = ()
) -> results_pb2.RunAuditRequest:
    """RunAudit's request: the truth to compare with, and the sinks to audit (none: every sink)."""
    if isinstance(truth, GeneratorTruth):
        generator = results_pb2.GeneratorTruth(seed=truth.seed, count=truth.count)
        return results_pb2.RunAuditRequest(generator=generator, sinks=list(sinks))
    topic = results_pb2.SourceTopicTruth(topic=truth.topic)
    return results_pb2.RunAuditRequest(source_topic=topic, sinks=list(sinks))


def audit_truth_from_proto(message: results_pb2.RunAuditRequest) -> GeneratorTruth | SourceTopicTruth | None:
    """The truth a RunAudit request names; None when it names none (its sinks are ``message.sinks``)."""
    which = message.WhichOneof("truth")
    if which == "generator":
        return GeneratorTruth(seed=message.generator.seed, count=message.generator.count)
    if which == "source_topic":
        return SourceTopicTruth(message.source_topic.topic)
    return None


def audit_to_proto(summary: AuditSummary) -> results_pb2.RunAuditResponse:
    sinks = [
        results_pb2.SinkAudit(
            sink=s.sink, windows_expected=s.windows_expected, matched=s.matched, missing=s.missing, extra=s.extra,
            mismatched=s.mismatched, exact=s.exact,
            examples=[results_pb2.CountMismatch(window_start_ms=e.window_start_ms, ip=e.ip, expected=e.expected,
                                                actual=e.actual) for e in s.examples],
        )
        for s in summary.sinks
    ]  # fmt: skip
    return results_pb2.RunAuditResponse(sinks=sinks, exact=summary.exact)


def audit_from_proto(message: results_pb2.RunAuditResponse) -> AuditSummary:
    sinks = tuple(
        SinkAuditSummary(
            sink=s.sink, windows_expected=s.windows_expected, matched=s.matched, missing=s.missing, extra=s.extra,
            mismatched=s.mismatched, exact=s.exact,
            examples=tuple(CountMismatch(e.window_start_ms, e.ip, e.expected, e.actual) for e in s.examples),
        )
        for s in message.sinks
    )  # fmt: skip
    return AuditSummary(sinks=sinks, exact=message.exact)


# -- Connect (the connect worker's admin API) -----------------------------------------------------


def _integral(value: Any) -> Any:
    """Struct numbers are doubles; give whole numbers back as ints (offsets are positions)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def struct_to_dict(struct: struct_pb2.Struct) -> dict[str, Any]:
    """A JSON object from a Struct, whole numbers as ints."""
    result: dict[str, Any] = _integral(json_format.MessageToDict(struct))
    return result


def dict_to_struct(value: Mapping[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


def connector_type_name(value: int) -> str:
    """``source`` or ``sink`` (``unspecified`` for 0), as Kafka Connect's REST API spells a type."""
    return connect_pb2.ConnectorType.Name(value).removeprefix("CONNECTOR_TYPE_").lower()


def work_state_name(value: int) -> str:
    """``RUNNING``, ``PAUSED``, ... (``UNSPECIFIED`` for 0), as Kafka Connect's REST API spells a state."""
    return connect_pb2.WorkState.Name(value).removeprefix("WORK_STATE_")


def work_state_to_proto(name: str) -> connect_pb2.WorkState:
    """The WorkState of ``RUNNING``, ``paused``, ...; ValueError naming the states for anything else."""
    try:
        return cast(connect_pb2.WorkState, connect_pb2.WorkState.Value(f"WORK_STATE_{name.upper()}"))
    except ValueError:
        names = ", ".join(work_state_name(v) for v in connect_pb2.WorkState.values() if v)
        raise ValueError(f"unknown connector state {name!r} (one of {names})") from None


def connector_info_from_proto(message: connect_pb2.ConnectorInfo) -> ConnectorInfo:
    return ConnectorInfo(
        name=message.name,
        config=dict(message.config),
        tasks=tuple(message.tasks),
        type=connector_type_name(message.type),
    )


def task_state_from_proto(message: connect_pb2.TaskStatus) -> TaskStateInfo:
    return TaskStateInfo(
        id=message.id,
        state=work_state_name(message.state),
        worker_id=message.worker_id,
        trace=message.trace,
        transactional_id=message.transactional_id,
        producer_id=message.producer_id,
        producer_epoch=message.producer_epoch,
        transactions_committed=message.transactions_committed,
        records_produced=message.records_produced,
    )


def connector_state_from_proto(message: connect_pb2.ConnectorStatus) -> ConnectorStateInfo:
    return ConnectorStateInfo(
        name=message.name,
        state=work_state_name(message.state),
        worker_id=message.worker_id,
        type=connector_type_name(message.type),
        trace=message.trace,
        tasks=tuple(task_state_from_proto(t) for t in message.tasks),
    )


def listing_from_proto(message: connect_pb2.ListConnectorsResponse) -> ConnectorListing:
    return ConnectorListing(
        names=tuple(message.names),
        statuses=tuple(connector_state_from_proto(s) for s in message.statuses),
        infos=tuple(connector_info_from_proto(i) for i in message.infos),
    )


def offset_to_proto(offset: ConnectorOffset) -> connect_pb2.ConnectorOffset:
    message = connect_pb2.ConnectorOffset(partition=dict_to_struct(offset.partition))
    if offset.offset is not None:
        message.offset.CopyFrom(dict_to_struct(offset.offset))
    return message


def offset_from_proto(message: connect_pb2.ConnectorOffset) -> ConnectorOffset:
    offset = struct_to_dict(message.offset) if message.HasField("offset") else None
    return ConnectorOffset(partition=struct_to_dict(message.partition), offset=offset)


def plugin_from_proto(message: connect_pb2.PluginInfo) -> PluginInfo:
    return PluginInfo(
        name=message.name,
        type=connector_type_name(message.type),
        version=message.version,
        entry_point=message.entry_point,
    )


def validation_from_proto(message: connect_pb2.ValidateConnectorConfigResponse) -> ConfigValidationResult:
    return ConfigValidationResult(
        error_count=message.error_count,
        configs=tuple(ConfigValidation(c.name, c.value, tuple(c.errors)) for c in message.configs),
    )
