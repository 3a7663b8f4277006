"""The typed client of ``onceflow.v1.IpCounts`` (ipcount.proto), the IP-count example's API on the results
consumer: one method per RPC, on the contract's client base (channel, TLS and token, deadlines, typed
errors: :class:`~onceflow.contract.clients.ServiceClient`)."""

from __future__ import annotations

from collections.abc import Generator, Iterable

from onceflow.contract.clients import ServiceClient
from onceflow.ipcount.api.convert import (
    audit_from_proto,
    audit_request_to_proto,
    ip_counts_from_proto,
    ip_counts_update_from_proto,
    top_ips_from_proto,
)
from onceflow.ipcount.api.values import (
    AuditSummary,
    GeneratorTruth,
    IpCount,
    IpCountsUpdate,
    SourceTopicTruth,
    TopIpCounts,
)
from onceflow.proto.v1 import ipcount_pb2, ipcount_pb2_grpc


class IpCountsClient(ServiceClient[ipcount_pb2_grpc.IpCountsStub]):
    """Calls on the IP-count service of the consumer at ``target``, each unary call with a deadline
    (``timeout_s`` per call, or the client's); answers are the example's values
    (:mod:`~onceflow.ipcount.api.values`) and a failed call raises its typed error
    (:mod:`~onceflow.contract.clients.errors`).

    The watch is a server stream without a deadline: iterate it, and ``close()`` the generator to cancel
    the call (closing the client cancels it too).
    """

    stub_class = ipcount_pb2_grpc.IpCountsStub

    def get_ip_counts(
        self,
        ip: str = "",
        window_start_from_ms: int = 0,
        window_start_to_ms: int = 0,
        *,
        timeout_s: float | None = None,
    ) -> tuple[IpCount, ...]:
        """The committed IP counts of ``ip`` in a range of window starts (0: open)."""
        request = ipcount_pb2.GetIpCountsRequest(
            ip=ip, window_start_from_ms=window_start_from_ms, window_start_to_ms=window_start_to_ms
        )
        response: ipcount_pb2.GetIpCountsResponse = self._unary(self._stub, "GetIpCounts", request, timeout_s)
        return ip_counts_from_proto(response.counts)

    def get_top_ips(self, window_start_ms: int = 0, limit: int = 0, *, timeout_s: float | None = None) -> TopIpCounts:
        """The ``limit`` busiest IPs of a window (0: the latest one)."""
        request = ipcount_pb2.GetTopIpsRequest(window_start_ms=window_start_ms, limit=limit)
        response: ipcount_pb2.GetTopIpsResponse = self._unary(self._stub, "GetTopIps", request, timeout_s)
        return top_ips_from_proto(response)

    def watch_results(self, window_start_from_ms: int = 0) -> Generator[IpCountsUpdate, None, None]:
        """The committed IP counts as transactions commit them, from a window start on."""
        request = ipcount_pb2.WatchResultsRequest(window_start_from_ms=window_start_from_ms)
        return self._converted(self._stream(self._stub, "WatchResults", request), ip_counts_update_from_proto)

    def run_audit(
        self,
        truth: GeneratorTruth | SourceTopicTruth,
        sinks: Iterable[str] = (),
        *,
        timeout_s: float | None = None,
    ) -> AuditSummary:
        """Compare ``sinks`` (none: every sink) with ``truth``; the answer is the audit's summary."""
        request = audit_request_to_proto(truth, sinks)
        response: ipcount_pb2.RunAuditResponse = self._unary(self._stub, "RunAudit", request, timeout_s)
        return audit_from_proto(response)
