"""Domain values to and from the Results API's messages."""

from __future__ import annotations

from collections.abc import Iterable

from onceflow.consumer.api.tables import TableInfo
from onceflow.consumer.audit import AuditReport, GeneratorSource, SinkAudit, TopicSource, TruthSource
from onceflow.consumer.exceptions import InvalidQuery
from onceflow.consumer.model import ResultRow
from onceflow.consumer.store import Row
from onceflow.core.avro.arrow import json_value
from onceflow.core.topics import SOURCE_TOPIC
from onceflow.proto.v1 import results_pb2


def rows_to_proto(rows: Iterable[ResultRow]) -> list[results_pb2.IpCount]:
    return [
        results_pb2.IpCount(window_start_ms=r.window_start, window_end_ms=r.window_end, ip=r.ip, count=r.count)
        for r in rows
    ]


def table_rows_to_proto(rows: Iterable[Row]) -> list[results_pb2.Row]:
    """Rows as JSON objects (timestamps and dates ISO-8601, decimals as strings, binary as base64)."""
    return [results_pb2.Row(json=json_value(row).decode()) for row in rows]


def table_to_proto(info: TableInfo) -> results_pb2.StoredTable:
    table = info.table
    columns = [
        results_pb2.Column(name=field.name, type=str(field.type), nullable=field.nullable)
        for field in (info.columns or ())
    ]
    return results_pb2.StoredTable(
        table=table.table, topic=table.topic, mode=table.mode.value, keys=list(table.keys),
        value_format=table.value_format.value, created=info.columns is not None, columns=columns,
    )  # fmt: skip


def truth_from_proto(request: results_pb2.RunAuditRequest) -> TruthSource:
    """The truth a RunAudit request names; an empty source topic means ``ip_count_source``."""
    which = request.WhichOneof("truth")
    if which == "generator":
        if request.generator.count < 0:
            raise InvalidQuery("generator.count", f"must be >= 0, got {request.generator.count}")
        return GeneratorSource(seed=request.generator.seed, count=request.generator.count)
    if which == "source_topic":
        return TopicSource(request.source_topic.topic or SOURCE_TOPIC)
    raise InvalidQuery("truth", "set generator (seed, count) or source_topic")


def sink_audit_to_proto(audit: SinkAudit) -> results_pb2.SinkAudit:
    """Duplicated keys count as mismatches in the message (actual = the sum of their rows); a missing
    row has actual 0 and an extra one expected 0."""
    return results_pb2.SinkAudit(
        sink=audit.sink,
        windows_expected=audit.windows_expected,
        matched=audit.matched,
        missing=audit.missing,
        extra=audit.extra,
        mismatched=audit.mismatched + audit.duplicated,
        examples=[
            results_pb2.CountMismatch(
                window_start_ms=diff.window_start,
                ip=diff.ip,
                expected=diff.expected or 0,
                actual=sum(diff.actual),
            )
            for diff in audit.examples
        ],
        exact=audit.exact,
    )


def report_to_proto(report: AuditReport) -> results_pb2.RunAuditResponse:
    return results_pb2.RunAuditResponse(
        sinks=[sink_audit_to_proto(audit) for audit in report.sinks], exact=report.exact
    )
