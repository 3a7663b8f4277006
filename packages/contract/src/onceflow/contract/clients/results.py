"""The typed client of ``onceflow.v1.Results`` (results.proto), the consumer's read API: one method per RPC
(an extension's services have their own clients, e.g. the IP-count example's ``IpCountsClient``)."""

from __future__ import annotations

from collections.abc import Generator

from onceflow.contract.clients.base import ServiceClient
from onceflow.contract.proto import (
    rows_page_from_proto,
    rows_update_from_proto,
    table_from_proto,
)
from onceflow.contract.results import (
    RowsPage,
    RowsUpdate,
    TableDescription,
)
from onceflow.proto.v1 import results_pb2, results_pb2_grpc


class ResultsClient(ServiceClient[results_pb2_grpc.ResultsStub]):
    """Calls on the consumer's Results service at ``target``, each unary call with a deadline
    (``timeout_s`` per call, or the client's); answers are the contract's values
    (:mod:`~onceflow.contract.results`) and a failed call raises its typed error
    (:mod:`~onceflow.contract.clients.errors`).

    The watch is a server stream without a deadline: iterate it, and ``close()`` the generator to cancel
    the call (closing the client cancels it too).
    """

    stub_class = results_pb2_grpc.ResultsStub

    def list_tables(self, *, timeout_s: float | None = None) -> list[TableDescription]:
        """The tables the consumer serves, with their topics, modes and columns."""
        request = results_pb2.ListTablesRequest()
        response: results_pb2.ListTablesResponse = self._unary(self._stub, "ListTables", request, timeout_s)
        return [table_from_proto(table) for table in response.tables]

    def list_rows(
        self, table: str, limit: int = 0, page_token: str = "", *, timeout_s: float | None = None
    ) -> RowsPage:
        """One page of ``table``'s committed rows; the answer's ``next_page_token`` continues it."""
        request = results_pb2.ListRowsRequest(table=table, limit=limit, page_token=page_token)
        response: results_pb2.ListRowsResponse = self._unary(self._stub, "ListRows", request, timeout_s)
        return rows_page_from_proto(response)

    def watch_rows(self, table: str) -> Generator[RowsUpdate, None, None]:
        """``table``'s rows as transactions commit them."""
        stream = self._stream(self._stub, "WatchRows", results_pb2.WatchRowsRequest(table=table))
        return self._converted(stream, rows_update_from_proto)
