"""The IP-count API's values (:mod:`.values`) to and from their ``onceflow.v1.IpCounts`` messages: what
the example's servicer sends is what its :class:`~onceflow.ipcount.api.IpCountsClient` answers. Each
value is named by its module (``values.IpCount``) beside its message (``ipcount_pb2.IpCount``)."""

from __future__ import annotations

from collections.abc import Iterable

from onceflow.ipcount.api import values
from onceflow.proto.v1 import ipcount_pb2


def ip_counts_to_proto(counts: Iterable[values.IpCount]) -> list[ipcount_pb2.IpCount]:
    return [ipcount_pb2.IpCount(window_start_ms=c.window_start_ms, window_end_ms=c.window_end_ms, ip=c.ip,
                                count=c.count) for c in counts]  # fmt: skip


def ip_counts_from_proto(messages: Iterable[ipcount_pb2.IpCount]) -> tuple[values.IpCount, ...]:
    return tuple(values.IpCount(m.window_start_ms, m.window_end_ms, m.ip, m.count) for m in messages)


def top_ips_to_proto(top: values.TopIpCounts) -> ipcount_pb2.GetTopIpsResponse:
    return ipcount_pb2.GetTopIpsResponse(window_start_ms=top.window_start_ms, counts=ip_counts_to_proto(top.counts))


def top_ips_from_proto(message: ipcount_pb2.GetTopIpsResponse) -> values.TopIpCounts:
    return values.TopIpCounts(message.window_start_ms, ip_counts_from_proto(message.counts))


def ip_counts_update_to_proto(update: values.IpCountsUpdate) -> ipcount_pb2.WatchResultsResponse:
    return ipcount_pb2.WatchResultsResponse(counts=ip_counts_to_proto(update.counts), offsets=update.offsets)


def ip_counts_update_from_proto(message: ipcount_pb2.WatchResultsResponse) -> values.IpCountsUpdate:
    return values.IpCountsUpdate(ip_counts_from_proto(message.counts), dict(message.offsets))


def audit_request_to_proto(
    truth: values.GeneratorTruth | values.SourceTopicTruth, sinks: Iterable[str] = ()
) -> ipcount_pb2.RunAuditRequest:
    """RunAudit's request: the truth to compare with, and the sinks to audit (none: every sink)."""
    if isinstance(truth, values.GeneratorTruth):
        generator = ipcount_pb2.GeneratorTruth(seed=truth.seed, count=truth.count)
        return ipcount_pb2.RunAuditRequest(generator=generator, sinks=list(sinks))
    topic = ipcount_pb2.SourceTopicTruth(topic=truth.topic)
    return ipcount_pb2.RunAuditRequest(source_topic=topic, sinks=list(sinks))


def audit_truth_from_proto(
    message: ipcount_pb2.RunAuditRequest,
) -> values.GeneratorTruth | values.SourceTopicTruth | None:
    """The truth a RunAudit request names; None when it names none (its sinks are ``message.sinks``)."""
    which = message.WhichOneof("truth")
    if which == "generator":
        return values.GeneratorTruth(seed=message.generator.seed, count=message.generator.count)
    if which == "source_topic":
        return values.SourceTopicTruth(message.source_topic.topic)
    return None


def audit_to_proto(summary: values.AuditSummary) -> ipcount_pb2.RunAuditResponse:
    sinks = [
        ipcount_pb2.SinkAudit(
            sink=s.sink, windows_expected=s.windows_expected, matched=s.matched, missing=s.missing, extra=s.extra,
            mismatched=s.mismatched, exact=s.exact,
            examples=[ipcount_pb2.CountMismatch(window_start_ms=e.window_start_ms, ip=e.ip, expected=e.expected,
                                                actual=e.actual) for e in s.examples],
        )
        for s in summary.sinks
    ]  # fmt: skip
    return ipcount_pb2.RunAuditResponse(sinks=sinks, exact=summary.exact)


def audit_from_proto(message: ipcount_pb2.RunAuditResponse) -> values.AuditSummary:
    sinks = tuple(
        values.SinkAuditSummary(
            sink=s.sink, windows_expected=s.windows_expected, matched=s.matched, missing=s.missing, extra=s.extra,
            mismatched=s.mismatched, exact=s.exact,
            examples=tuple(values.CountMismatch(e.window_start_ms, e.ip, e.expected, e.actual) for e in s.examples),
        )
        for s in message.sinks
    )  # fmt: skip
    return values.AuditSummary(sinks=sinks, exact=message.exact)
