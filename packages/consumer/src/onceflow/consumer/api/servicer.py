"""``onceflow.v1.Results``: a thin adapter over :class:`TableQuery` and the feed.

An extension serves services of its own beside it (the IP-count example's ``onceflow.v1.IpCounts``),
built from the same :class:`ResultsApi`
(:meth:`~onceflow.consumer.extension.ConsumerExtension.services`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import grpc

from onceflow.consumer.api.convert import json_rows, table_description
from onceflow.consumer.api.tables import TableQuery
from onceflow.consumer.api.watch import live_feed, watch_feed
from onceflow.consumer.exceptions import FeatureUnavailable, InvalidQuery, UnknownTable
from onceflow.consumer.feed import ResultsFeed, ResultsUpdate
from onceflow.consumer.store import ResultsStore
from onceflow.contract.proto import rows_page_to_proto, rows_update_to_proto, table_to_proto
from onceflow.contract.results import RowsPage, RowsUpdate
from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.core.grpc import DEFAULT_STATUS_CODES, translate_errors
from onceflow.core.logging import get_logger
from onceflow.proto.v1 import results_pb2, results_pb2_grpc

if TYPE_CHECKING:
    from onceflow.consumer.settings import ConsumerSettings

SERVICE_NAME: Final = results_pb2.DESCRIPTOR.services_by_name["Results"].full_name
STATUS_CODES: Final = {
    **DEFAULT_STATUS_CODES,
    InvalidQuery: grpc.StatusCode.INVALID_ARGUMENT,
    UnknownTable: grpc.StatusCode.NOT_FOUND,
    FeatureUnavailable: grpc.StatusCode.FAILED_PRECONDITION,
}

_log = get_logger(__name__)


@dataclass(frozen=True)
class ResultsApi:
    """What the consumer's servicers serve from (its Results servicer's and every extension's): the
    settings, the API's store connection, the stored tables, the feed of committed batches (None: no
    consumer runs here) and the process's fault injector (the injection point of work an extension runs
    for a call, such as the example's audits)."""

    settings: ConsumerSettings
    store: ResultsStore
    tables: TableQuery
    feed: ResultsFeed | None = None
    faults: FaultInjector = NO_FAULTS


class ResultsServicer(results_pb2_grpc.ResultsServicer):
    """Serves the stored tables and pushes applied batches to watchers.

    ``api.feed`` is None when no consumer runs in this process (WatchRows is then
    FAILED_PRECONDITION).
    """

    def __init__(self, api: ResultsApi) -> None:
        self.api = api
        self.tables = api.tables
        self.feed = api.feed

    @translate_errors(STATUS_CODES)
    def WatchRows(  # noqa: N802
        self, request: results_pb2.WatchRowsRequest, context: grpc.ServicerContext
    ) -> Iterator[results_pb2.WatchRowsResponse]:
        """Stream the rows of one table every batch the consumer commits from now on stores. The first
        message has no rows, only the offsets of the table's topic: once it arrived, nothing is missed."""
        table = self.tables.table(request.table)
        feed = live_feed(self.feed)

        def message(update: ResultsUpdate | None) -> results_pb2.WatchRowsResponse | None:
            if update is None:
                return results_pb2.WatchRowsResponse(offsets=feed.offsets(table.topic))
            rows = update.rows.get(table.table, ())
            if not rows:
                return None
            return rows_update_to_proto(RowsUpdate(json_rows(rows), update.offsets.get(table.topic, {})))

        return watch_feed(feed, message, context)

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
