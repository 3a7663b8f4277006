"""``onceflow.v1.IpCounts`` (GetIpCounts, GetTopIps, WatchResults, RunAudit): a thin adapter over
:class:`ResultsQuery`, the consumer's feed and the bounded audits, served on the consumer's server
beside its Results service (:class:`~onceflow.ipcount.consumer.IpCountExtension`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

import grpc

from onceflow.consumer.api import STATUS_CODES, ResultsApi, live_feed, watch_feed
from onceflow.consumer.exceptions import InvalidQuery
from onceflow.consumer.feed import ResultsUpdate
from onceflow.core.grpc import translate_errors
from onceflow.core.logging import get_logger
from onceflow.ipcount.api.convert import (
    audit_to_proto,
    audit_truth_from_proto,
    ip_counts_to_proto,
    ip_counts_update_to_proto,
    top_ips_to_proto,
)
from onceflow.ipcount.api.values import IpCount, IpCountsUpdate, TopIpCounts
from onceflow.ipcount.audit.bounded import AuditsBusy, AuditStopped, BoundedAuditRunner
from onceflow.ipcount.audit.convert import audit_summary, truth_source
from onceflow.ipcount.audit.runner import Auditor
from onceflow.ipcount.consumer.query import ResultsQuery
from onceflow.ipcount.consumer.tables import STORE_TABLE
from onceflow.ipcount.consumer.views import IpCountViews, ResultRow, as_result_row
from onceflow.proto.v1 import ipcount_pb2, ipcount_pb2_grpc

#: The service's full name (``onceflow.v1.IpCounts``).
SERVICE_NAME: Final = ipcount_pb2.DESCRIPTOR.services_by_name["IpCounts"].full_name
#: The consumer's status codes, and RESOURCE_EXHAUSTED for an audit past ``audit.max_concurrent``.
AUDIT_STATUS_CODES: Final = {**STATUS_CODES, AuditsBusy: grpc.StatusCode.RESOURCE_EXHAUSTED}
#: The status of a RunAudit the server stopped, by why it stopped.
AUDIT_STOPPED_CODES: Final = {
    "cancelled": grpc.StatusCode.CANCELLED,
    "deadline": grpc.StatusCode.DEADLINE_EXCEEDED,
    "shutdown": grpc.StatusCode.UNAVAILABLE,
}

_log = get_logger(__name__)


def ip_counts(rows: Iterable[ResultRow]) -> tuple[IpCount, ...]:
    return tuple(IpCount(r.window_start, r.window_end, r.ip, r.count) for r in rows)


class IpCountsServicer(ipcount_pb2_grpc.IpCountsServicer):
    """The IP-count views' RPCs over the consumer's API (opening the views creates the ``results``
    table and its index on the API's store connection) and RunAudit (the audits of the consumer's
    ``[audit]`` settings, each in a child process within its bounds; :meth:`close` stops the running
    ones)."""

    def __init__(self, api: ResultsApi) -> None:
        self.api = api
        self.query = ResultsQuery(IpCountViews(api.store), allowed_lateness_ms=api.settings.api.allowed_lateness_ms)
        settings = api.settings
        self.audits = BoundedAuditRunner(
            Auditor(settings.kafka, settings.audit, settings.store),
            max_generator_events=settings.audit.max_generator_events,
            max_duration_s=settings.audit.max_duration_s,
            max_concurrent=settings.audit.max_concurrent,
            faults=api.faults,
        )

    def close(self) -> None:
        self.audits.stop()

    @translate_errors(STATUS_CODES)
    def GetIpCounts(  # noqa: N802 - gRPC method name
        self, request: ipcount_pb2.GetIpCountsRequest, context: grpc.ServicerContext
    ) -> ipcount_pb2.GetIpCountsResponse:
        rows = self.query.ip_counts(request.ip, request.window_start_from_ms, request.window_start_to_ms)
        return ipcount_pb2.GetIpCountsResponse(counts=ip_counts_to_proto(ip_counts(rows)))

    @translate_errors(STATUS_CODES)
    def GetTopIps(  # noqa: N802
        self, request: ipcount_pb2.GetTopIpsRequest, context: grpc.ServicerContext
    ) -> ipcount_pb2.GetTopIpsResponse:
        window, rows = self.query.top_ips(request.window_start_ms, request.limit)
        return top_ips_to_proto(TopIpCounts(window, ip_counts(rows)))

    @translate_errors(STATUS_CODES)
    def WatchResults(  # noqa: N802
        self, request: ipcount_pb2.WatchResultsRequest, context: grpc.ServicerContext
    ) -> Iterator[ipcount_pb2.WatchResultsResponse]:
        """Stream every batch the consumer commits from now on (rows of windows starting at or after
        ``window_start_from_ms``). The first message has no rows, only the current offsets: once it
        arrived, the stream is live and misses nothing."""
        if request.window_start_from_ms < 0:
            raise InvalidQuery("window_start_from_ms", f"must be >= 0, got {request.window_start_from_ms}")
        feed = live_feed(self.api.feed)
        stored = self.api.tables.tables.by_table(STORE_TABLE)
        topic, window_start_from = (stored.topic if stored else ""), request.window_start_from_ms

        def message(update: ResultsUpdate | None) -> ipcount_pb2.WatchResultsResponse | None:
            if update is None:
                return ipcount_pb2.WatchResultsResponse(offsets=feed.offsets(topic))
            rows = [as_result_row(row) for row in update.rows.get(STORE_TABLE, ())]
            rows = [row for row in rows if row.window_start >= window_start_from]
            if not rows:
                return None
            return ip_counts_update_to_proto(IpCountsUpdate(ip_counts(rows), update.offsets.get(topic, {})))

        return watch_feed(feed, message, context)

    @translate_errors(AUDIT_STATUS_CODES)
    def RunAudit(  # noqa: N802
        self, request: ipcount_pb2.RunAuditRequest, context: grpc.ServicerContext
    ) -> ipcount_pb2.RunAuditResponse:
        source = truth_source(audit_truth_from_proto(request))
        try:
            report = self.audits.run(
                source, list(request.sinks), is_active=context.is_active, time_remaining=context.time_remaining
            )
        except AuditStopped as exc:
            _log.warning("audit.stopped", why=exc.why, reason=str(exc))
            context.abort(AUDIT_STOPPED_CODES[exc.why], f"audit stopped: {exc}")
        _log.info("audit.done", truth=report.truth_source, exact=report.exact, sinks=len(report.sinks))
        return audit_to_proto(audit_summary(report))
