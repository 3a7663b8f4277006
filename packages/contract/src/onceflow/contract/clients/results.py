"""The typed client of ``onceflow.v1.Results`` (results.proto), the consumer's read API: one method per RPC."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from typing import Any, TypeVar

from onceflow.contract.clients.base import ServiceClient
from onceflow.contract.proto import (
    audit_from_proto,
    audit_request_to_proto,
    ip_counts_from_proto,
    ip_counts_update_from_proto,
    rows_page_from_proto,
    rows_update_from_proto,
    table_from_proto,
    top_ips_from_proto,
)
from onceflow.contract.results import (
    AuditSummary,
    GeneratorTruth,
    IpCount,
    IpCountsUpdate,
    RowsPage,
    RowsUpdate,
    SourceTopicTruth,
    TableDescription,
    TopIpCounts,
)
from onceflow.core.settings import TlsSettings
from onceflow.proto.v1 import results_pb2, results_pb2_grpc

T = TypeVar("T")


def _converted(stream: Generator[Any, None, None], convert: Callable[[Any], T]) -> Generator[T, None, None]:
    """``stream``'s messages as contract values; closing this closes (cancels) ``stream``."""
    try:
        for message in stream:
            yield convert(message)
    finally:
        stream.close()


class ResultsClient(ServiceClient):
    """Calls on the consumer's Results service at ``target``, each unary call with a deadline
    (``timeout_s`` per call, or the client's); answers are the contract's values
    (:mod:`~onceflow.contract.results`) and a failed call raises its typed error
    (:mod:`~onceflow.contract.clients.errors`).

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
    ) -> tuple[IpCount, ...]:
        """The committed IP counts of ``ip`` in a range of window starts (0: open)."""
        request = results_pb2.GetIpCountsRequest(
            ip=ip, window_start_from_ms=window_start_from_ms, window_start_to_ms=window_start_to_ms
        )
        response: results_pb2.GetIpCountsResponse = self._unary(self._stub, "GetIpCounts", request, timeout_s)
        return ip_counts_from_proto(response.counts)

    def get_top_ips(self, window_start_ms: int = 0, limit: int = 0, *, timeout_s: float | None = None) -> TopIpCounts:
        """The ``limit`` busiest IPs of a window (0: the latest one)."""
        request = results_pb2.GetTopIpsRequest(window_start_ms=window_start_ms, limit=limit)
        response: results_pb2.GetTopIpsResponse = self._unary(self._stub, "GetTopIps", request, timeout_s)
        return top_ips_from_proto(response)

    def watch_results(self, window_start_from_ms: int = 0) -> Generator[IpCountsUpdate, None, None]:
        """The committed IP counts as transactions commit them, from a window start on."""
        request = results_pb2.WatchResultsRequest(window_start_from_ms=window_start_from_ms)
        return _converted(self._stream(self._stub, "WatchResults", request), ip_counts_update_from_proto)

    def run_audit(
        self,
        truth: GeneratorTruth | SourceTopicTruth,
        sinks: Iterable[str] = (),
        *,
        timeout_s: float | None = None,
    ) -> AuditSummary:
        """Compare ``sinks`` (none: every sink) with ``truth``; the answer is the audit's summary."""
        request = audit_request_to_proto(truth, sinks)
        response: results_pb2.RunAuditResponse = self._unary(self._stub, "RunAudit", request, timeout_s)
        return audit_from_proto(response)

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
        return _converted(stream, rows_update_from_proto)
