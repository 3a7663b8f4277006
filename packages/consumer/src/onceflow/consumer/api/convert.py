"""Domain values to and from the Results API's contract values (:mod:`onceflow.contract.results`;
their messages are :mod:`onceflow.contract.proto`'s)."""

from __future__ import annotations

from collections.abc import Iterable

from onceflow.consumer.api.tables import TableInfo
from onceflow.consumer.audit import AuditReport, GeneratorSource, SinkAudit, TopicSource, TruthSource
from onceflow.consumer.exceptions import InvalidQuery
from onceflow.consumer.store import Row
from onceflow.contract.results import (
    AuditSummary,
    CountMismatch,
    GeneratorTruth,
    SinkAuditSummary,
    SourceTopicTruth,
    TableColumn,
    TableDescription,
)
from onceflow.core.avro.arrow import json_value
from onceflow.core.topics import SOURCE_TOPIC


def json_rows(rows: Iterable[Row]) -> tuple[str, ...]:
    """Rows as JSON objects (timestamps and dates ISO-8601, decimals as strings, binary as base64)."""
    return tuple(json_value(row).decode() for row in rows)


def table_description(info: TableInfo) -> TableDescription:
    table = info.table
    columns = tuple(TableColumn(field.name, str(field.type), field.nullable) for field in (info.columns or ()))
    return TableDescription(
        table=table.table, topic=table.topic, mode=table.mode.value, keys=table.keys,
        value_format=table.value_format.value, created=info.columns is not None, columns=columns,
    )  # fmt: skip


def truth_source(truth: GeneratorTruth | SourceTopicTruth | None) -> TruthSource:
    """The truth a RunAudit request names; an empty source topic means ``ip_count_source``."""
    if isinstance(truth, GeneratorTruth):
        if truth.count < 0:
            raise InvalidQuery("generator.count", f"must be >= 0, got {truth.count}")
        return GeneratorSource(seed=truth.seed, count=truth.count)
    if isinstance(truth, SourceTopicTruth):
        return TopicSource(truth.topic or SOURCE_TOPIC)
    raise InvalidQuery("truth", "set generator (seed, count) or source_topic")


def sink_audit_summary(audit: SinkAudit) -> SinkAuditSummary:
    """Duplicated keys count as mismatches in the summary (actual = the sum of their rows); a missing
    row has actual 0 and an extra one expected 0."""
    return SinkAuditSummary(
        sink=audit.sink,
        windows_expected=audit.windows_expected,
        matched=audit.matched,
        missing=audit.missing,
        extra=audit.extra,
        mismatched=audit.mismatched + audit.duplicated,
        examples=tuple(
            CountMismatch(diff.window_start, diff.ip, diff.expected or 0, sum(diff.actual)) for diff in audit.examples
        ),
        exact=audit.exact,
    )


def audit_summary(report: AuditReport) -> AuditSummary:
    return AuditSummary(sinks=tuple(sink_audit_summary(audit) for audit in report.sinks), exact=report.exact)
