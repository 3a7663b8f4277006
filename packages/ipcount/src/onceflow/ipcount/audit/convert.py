"""The IP-count audit's values to and from RunAudit's values (:mod:`onceflow.ipcount.api.values`)."""

from __future__ import annotations

from onceflow.consumer.exceptions import InvalidQuery
from onceflow.core.topics import SOURCE_TOPIC
from onceflow.ipcount.api.values import (
    AuditSummary,
    CountMismatch,
    GeneratorTruth,
    SinkAuditSummary,
    SourceTopicTruth,
)
from onceflow.ipcount.audit.model import AuditReport, SinkAudit
from onceflow.ipcount.audit.runner import GeneratorSource, TopicSource, TruthSource


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
