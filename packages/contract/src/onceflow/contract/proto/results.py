"""The Results API's values (``results.proto``, :mod:`onceflow.contract.results`) to and from their
messages: stored tables, pages and watches of rows, the IP-count views' answers and the audit's."""

from __future__ import annotations

from collections.abc import Iterable

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
from onceflow.proto.v1 import results_pb2


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
