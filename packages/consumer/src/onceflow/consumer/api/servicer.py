"""``onceflow.v1.Results``: a thin adapter over :class:`ResultsQuery`, :class:`TableQuery`, the feed and
the :class:`Auditor`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final, TypeVar

import grpc
from google.protobuf.message import Message

from onceflow.consumer.api.convert import audit_summary, ip_counts, json_rows, table_description, truth_source
from onceflow.consumer.api.query import ResultsQuery
from onceflow.consumer.api.tables import TableQuery
from onceflow.consumer.audit.bounded import AuditsBusy, AuditStopped, BoundedAuditRunner
from onceflow.consumer.exceptions import FeatureUnavailable, InvalidQuery, UnknownTable
from onceflow.consumer.feed import ResultsFeed, ResultsUpdate, Subscription
from onceflow.consumer.store import IP_COUNT_TABLE, as_result_row
from onceflow.core.contract.proto import (
    audit_to_proto,
    audit_truth_from_proto,
    ip_counts_to_proto,
    ip_counts_update_to_proto,
    rows_page_to_proto,
    rows_update_to_proto,
    table_to_proto,
    top_ips_to_proto,
)
from onceflow.core.contract.results import IpCountsUpdate, RowsPage, RowsUpdate, TopIpCounts
from onceflow.core.grpc import DEFAULT_STATUS_CODES, translate_errors
from onceflow.core.logging import get_logger
from onceflow.proto.v1 import results_pb2, results_pb2_grpc

SERVICE_NAME: Final = results_pb2.DESCRIPTOR.services_by_name["Results"].full_name
STATUS_CODES: Final = {
    **DEFAULT_STATUS_CODES,
    InvalidQuery: grpc.StatusCode.INVALID_ARGUMENT,
    UnknownTable: grpc.StatusCode.NOT_FOUND,
    FeatureUnavailable: grpc.StatusCode.FAILED_PRECONDITION,
    AuditsBusy: grpc.StatusCode.RESOURCE_EXHAUSTED,
}
#: The status of a RunAudit the server stopped, by why it stopped.
AUDIT_STOPPED_CODES: Final = {
    "cancelled": grpc.StatusCode.CANCELLED,
    "deadline": grpc.StatusCode.DEADLINE_EXCEEDED,
    "shutdown": grpc.StatusCode.UNAVAILABLE,
}
#: How often a watch stream checks that its client is still there.
WATCH_TICK_S: Final = 0.25

_log = get_logger(__name__)

M = TypeVar("M", bound=Message)


class ResultsServicer(results_pb2_grpc.ResultsServicer):
    """Serves queries over the store, pushes applied batches to watchers, and runs audits.

    ``feed`` is None when no consumer runs in this process (WatchResults and WatchRows are then
    FAILED_PRECONDITION); ``audits`` None disables RunAudit the same way.
    """

    def __init__(
        self,
        query: ResultsQuery,
        tables: TableQuery,
        feed: ResultsFeed | None = None,
        audits: BoundedAuditRunner | None = None,
    ) -> None:
        self.query = query
        self.tables = tables
        self.feed = feed
        self.audits = audits

    @translate_errors(STATUS_CODES)
    def GetIpCounts(  # noqa: N802 - gRPC method name
        self, request: results_pb2.GetIpCountsRequest, context: grpc.ServicerContext
    ) -> results_pb2.GetIpCountsResponse:
        rows = self.query.ip_counts(request.ip, request.window_start_from_ms, request.window_start_to_ms)
        return results_pb2.GetIpCountsResponse(counts=ip_counts_to_proto(ip_counts(rows)))

    @translate_errors(STATUS_CODES)
    def GetTopIps(  # noqa: N802
        self, request: results_pb2.GetTopIpsRequest, context: grpc.ServicerContext
    ) -> results_pb2.GetTopIpsResponse:
        window, rows = self.query.top_ips(request.window_start_ms, request.limit)
        return top_ips_to_proto(TopIpCounts(window, ip_counts(rows)))

    @translate_errors(STATUS_CODES)
    def WatchResults(  # noqa: N802
        self, request: results_pb2.WatchResultsRequest, context: grpc.ServicerContext
    ) -> Iterator[results_pb2.WatchResultsResponse]:
        """Stream every batch the consumer commits from now on (rows of windows starting at or after
        ``window_start_from_ms``). The first message has no rows, only the current offsets: once it
        arrived, the stream is live and misses nothing."""
        if request.window_start_from_ms < 0:
            raise InvalidQuery("window_start_from_ms", f"must be >= 0, got {request.window_start_from_ms}")
        feed = self._feed()
        stored = self.tables.tables.by_table(IP_COUNT_TABLE)
        topic, window_start_from = (stored.topic if stored else ""), request.window_start_from_ms

        def message(update: ResultsUpdate | None) -> results_pb2.WatchResultsResponse | None:
            if update is None:
                return results_pb2.WatchResultsResponse(offsets=feed.offsets(topic))
            rows = [as_result_row(row) for row in update.rows.get(IP_COUNT_TABLE, ())]
            rows = [row for row in rows if row.window_start >= window_start_from]
            if not rows:
                return None
            return ip_counts_update_to_proto(IpCountsUpdate(ip_counts(rows), update.offsets.get(topic, {})))

        return self._stream(feed, feed.subscribe(), message, context)

    @translate_errors(STATUS_CODES)
    def WatchRows(  # noqa: N802
        self, request: results_pb2.WatchRowsRequest, context: grpc.ServicerContext
    ) -> Iterator[results_pb2.WatchRowsResponse]:
        """Stream the rows of one table every batch the consumer commits from now on stores. The first
        message has no rows, only the offsets of the table's topic: once it arrived, nothing is missed."""
        table = self.tables.table(request.table)
        feed = self._feed()

        def message(update: ResultsUpdate | None) -> results_pb2.WatchRowsResponse | None:
            if update is None:
                return results_pb2.WatchRowsResponse(offsets=feed.offsets(table.topic))
            rows = update.rows.get(table.table, ())
            if not rows:
                return None
            return rows_update_to_proto(RowsUpdate(json_rows(rows), update.offsets.get(table.topic, {})))

        return self._stream(feed, feed.subscribe(), message, context)

    def _feed(self) -> ResultsFeed:
        if self.feed is None:
            raise FeatureUnavailable("no consumer runs in this server: nothing to watch")
        return self.feed

    @staticmethod
    def _stream(
        feed: ResultsFeed,
        subscription: Subscription,
        message: Callable[[ResultsUpdate | None], M | None],
        context: grpc.ServicerContext,
    ) -> Iterator[M]:
        """The first message (``message(None)``), then ``message(update)`` of every update that has one."""
        try:
            first = message(None)
            assert first is not None
            yield first
            while context.is_active():
                if subscription.overflowed.is_set():
                    context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "watcher fell behind the consumer; watch again")
                update = subscription.get(WATCH_TICK_S)
                if update is None:
                    continue
                found = message(update)
                if found is not None:
                    yield found
        finally:
            feed.unsubscribe(subscription)

    @translate_errors(STATUS_CODES)
    def ListTables(  # noqa: N802
        self, request: results_pb2.ListTablesRequest, context: grpc.ServicerContext
    ) -> results_pb2.ListTablesResponse:
        tables = [table_to_proto(table_description(info)) for info in self.tables.list_tables()]
        return results_pb2.ListTablesResponse(tables=tables)

    @translate_errors(STATUS_CODES)
    def ListRows(  # noqa: N802
        self, request: results_pb2.ListRowsRequest, context: grpc.ServicerContext
    ) -> results_pb2.ListRowsResponse:
        page = self.tables.rows(request.table, request.limit, request.page_token)
        return rows_page_to_proto(RowsPage(json_rows(page.rows), page.next_page_token))

    @translate_errors(STATUS_CODES)
    def RunAudit(  # noqa: N802
        self, request: results_pb2.RunAuditRequest, context: grpc.ServicerContext
    ) -> results_pb2.RunAuditResponse:
        source = truth_source(audit_truth_from_proto(request))
        if self.audits is None:
            raise FeatureUnavailable("audits are not configured on this server")
        try:
            report = self.audits.run(
                source, list(request.sinks), is_active=context.is_active, time_remaining=context.time_remaining
            )
        except AuditStopped as exc:
            _log.warning("audit.stopped", why=exc.why, reason=str(exc))
            context.abort(AUDIT_STOPPED_CODES[exc.why], f"audit stopped: {exc}")
        _log.info("audit.done", truth=report.truth_source, exact=report.exact, sinks=len(report.sinks))
        return audit_to_proto(audit_summary(report))
