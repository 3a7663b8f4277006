"""The typed client of ``onceflow.v1.Results`` (results.proto), the consumer's read API: one method per RPC."""

from __future__ import annotations

from collections.abc import Generator

from onceflow.core.contract.clients.base import ServiceClient
from onceflow.core.settings import TlsSettings
from onceflow.proto.v1 import results_pb2, results_pb2_grpc


class ResultsClient(ServiceClient):
    """Calls on the consumer's Results service at ``target``, each unary call with a deadline
    (``timeout_s`` per call, or the client's); answers are the ``onceflow.v1`` response messages and a
    failed call raises its typed error (:mod:`~onceflow.core.contract.clients.errors`).

    The watches are server streams without a deadline: iterate them, and ``close()`` the generator to cancel
    the call (closing the client cancels it too).
    """

    def __init__(self, target: str, tls: TlsSettings | None = None, *, timeout_s: float = 30.0) -> None:
        super().__init__(target, tls, timeout_s=timeout_s)
        self._stub = results_pb2_grpc.ResultsStub(self.channel)  # type: ignore[no-untyped-call]

    @property
    def stub(self) -> results_pb2_grpc.ResultsStub:
        """The raw stub on this client's channel, for tests that send requests the methods would not build."""
        return self._stub

    def get_ip_counts(
        self,
        ip: str = "",
        window_start_from_ms: int = 0,
        window_start_to_ms: int = 0,
        *,
        timeout_s: float | None = None,
    ) -> results_pb2.GetIpCountsResponse:
        """The committed IP counts of ``ip`` (every IP when empty) in a range of window starts (0: open)."""
        request = results_pb2.GetIpCountsRequest(
            ip=ip, window_start_from_ms=window_start_from_ms, window_start_to_ms=window_start_to_ms
        )
        response: results_pb2.GetIpCountsResponse = self._unary(self._stub, "GetIpCounts", request, timeout_s)
        return response

    def get_top_ips(
        self, window_start_ms: int = 0, limit: int = 0, *, timeout_s: float | None = None
    ) -> results_pb2.GetTopIpsResponse:
        """The ``limit`` busiest IPs of a window (0: the latest one)."""
        request = results_pb2.GetTopIpsRequest(window_start_ms=window_start_ms, limit=limit)
        response: results_pb2.GetTopIpsResponse = self._unary(self._stub, "GetTopIps", request, timeout_s)
        return response

    def watch_results(self, window_start_from_ms: int = 0) -> Generator[results_pb2.WatchResultsResponse, None, None]:
        """The committed IP counts as transactions commit them, from a window start on."""
        request = results_pb2.WatchResultsRequest(window_start_from_ms=window_start_from_ms)
        return self._stream(self._stub, "WatchResults", request)

    def run_audit(
        self, request: results_pb2.RunAuditRequest, *, timeout_s: float | None = None
    ) -> results_pb2.RunAuditResponse:
        """Compare the sinks with the truth ``request`` names; the answer is the audit's report."""
        response: results_pb2.RunAuditResponse = self._unary(self._stub, "RunAudit", request, timeout_s)
        return response

    def list_tables(self, *, timeout_s: float | None = None) -> results_pb2.ListTablesResponse:
        """The tables the consumer serves, with their topics, modes and columns."""
        request = results_pb2.ListTablesRequest()
        response: results_pb2.ListTablesResponse = self._unary(self._stub, "ListTables", request, timeout_s)
        return response

    def list_rows(
        self, table: str, limit: int = 0, page_token: str = "", *, timeout_s: float | None = None
    ) -> results_pb2.ListRowsResponse:
        """One page of ``table``'s committed rows; the answer's ``next_page_token`` continues it."""
        request = results_pb2.ListRowsRequest(table=table, limit=limit, page_token=page_token)
        response: results_pb2.ListRowsResponse = self._unary(self._stub, "ListRows", request, timeout_s)
        return response

    def watch_rows(self, table: str) -> Generator[results_pb2.WatchRowsResponse, None, None]:
        """``table``'s rows as transactions commit them."""
        return self._stream(self._stub, "WatchRows", results_pb2.WatchRowsRequest(table=table))
