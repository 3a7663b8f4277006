"""The consumer's gRPC services (its Results API, and the IP-count example's ``IpCounts`` that its
extension serves on the same server) cannot be starved or blown up by their clients (issue 22, item 4).

Attacks, on a consumer with the deployed rule (a token for the mutating RPCs; reads open):

- twenty unauthenticated ``WatchResults``/``WatchRows`` streams (of the two services) used to take
  every thread of the server, so that authenticated calls timed out. Expected: a client gets at most
  ``server.limits.max_streams_per_client`` streams across both services, the rest RESOURCE_EXHAUSTED at
  once, and ``RunAudit`` and ``GetIpCounts`` still answer (onceflow.core.grpc bounds streams for every
  server, whatever services an extension adds);
- hostile arguments to the extension's service (an ip of 100 000 characters or with a newline,
  negative windows, a huge limit or generator count) are INVALID_ARGUMENT naming the argument, and an
  unauthenticated RunAudit is UNAUTHENTICATED; the service answers afterwards;
- six ``RunAudit`` at once used 780 MB. Expected: ``audit.max_concurrent`` run, the others are
  RESOURCE_EXHAUSTED naming the limit. The audits are held at their start by an injected hook
  (:class:`onceflow.testing.faults.HoldAt`), so the outcome does not depend on the machine's speed.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.consumer.service import ConsumerService
from onceflow.consumer.settings import ConsumerSettings
from onceflow.contract.clients import ResultsClient
from onceflow.core.settings import TlsSettings
from onceflow.ipcount.api import IpCountsClient
from onceflow.proto.v1 import ipcount_pb2, results_pb2
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.faults import HoldAt

TOKEN = "results-token"


def consumer(broker: EmbeddedBroker, tmp_path: Path, **extra: Any) -> ConsumerService:
    token = tmp_path / "token"
    token.write_text(TOKEN)
    topic = "attacks-results"
    create_topic(broker.bootstrap_servers, topic, 1)
    settings = ConsumerSettings.model_validate(
        {
            "kafka": {"bootstrap_servers": broker.bootstrap_servers},
            "consumer": {"topic": topic, "group_id": "attacks"},
            "store": {"path": str(tmp_path / "results.db")},
            "server": {"host": "127.0.0.1", "port": 0, "auth": {"token_file": str(token)}},
            "audit": {"sinks": [{"name": "kafka", "kind": "kafka", "topic": topic}]},
        }
    )
    return ConsumerService(settings, **extra).start()


@dataclass(frozen=True)
class Stubs:
    """A caller's stubs of the consumer's two services, on one channel each."""

    results: Any
    ipcounts: Any


@pytest.fixture
def stubs(tmp_path: Path) -> Iterator[Callable[[ConsumerService], tuple[Stubs, Stubs]]]:
    """(anonymous stubs, stubs sending the token) of a started consumer; channels closed at teardown."""
    clients: list[ResultsClient | IpCountsClient] = []

    def make(service: ConsumerService) -> tuple[Stubs, Stubs]:
        target = f"127.0.0.1:{service.port}"
        (tmp_path / "client-token").write_text(TOKEN)
        tls = TlsSettings(token_file=str(tmp_path / "client-token"))
        callers = []
        for settings in (None, tls):
            results, ipcounts = ResultsClient(target, settings), IpCountsClient(target, settings)
            clients.extend([results, ipcounts])
            callers.append(Stubs(results.stub, ipcounts.stub))
        return callers[0], callers[1]

    yield make
    for client in clients:
        client.close()


def first_message(call: Any) -> grpc.StatusCode:
    """OK once the stream's first message arrived (it is open), or the code that ended it."""
    try:
        next(call)
    except grpc.RpcError as exc:
        code: grpc.StatusCode = exc.code()
        return code
    return grpc.StatusCode.OK


def test_twenty_open_streams_leave_the_other_rpcs_answering(broker: EmbeddedBroker, tmp_path: Path, stubs: Any) -> None:
    service = consumer(broker, tmp_path)
    try:
        anonymous, authenticated = stubs(service)
        calls = [
            anonymous.ipcounts.WatchResults(ipcount_pb2.WatchResultsRequest()) if i % 2 else
            anonymous.results.WatchRows(results_pb2.WatchRowsRequest(table="results"))
            for i in range(20)
        ]  # fmt: skip
        with concurrent.futures.ThreadPoolExecutor(20) as pool:
            codes = list(pool.map(first_message, calls, timeout=60))
        limit = service.settings.server.limits.max_streams_per_client
        assert codes.count(grpc.StatusCode.OK) == limit, codes
        assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == 20 - limit, codes

        # the open streams hold threads, and the other calls still answer promptly
        assert (
            authenticated.ipcounts.GetIpCounts(ipcount_pb2.GetIpCountsRequest(ip="10.0.0.1"), timeout=10).counts == []
        )
        report = authenticated.ipcounts.RunAudit(
            ipcount_pb2.RunAuditRequest(generator=ipcount_pb2.GeneratorTruth(seed=1, count=10)), timeout=60
        )
        assert report.sinks
        with pytest.raises(grpc.RpcError) as refused:
            next(anonymous.ipcounts.WatchResults(ipcount_pb2.WatchResultsRequest(), timeout=10))
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "max_streams_per_client" in (refused.value.details() or "")

        # a closed stream gives its slot back
        calls[codes.index(grpc.StatusCode.OK)].cancel()
        fresh = anonymous.ipcounts.WatchResults(ipcount_pb2.WatchResultsRequest())
        assert _eventually_open(anonymous.ipcounts, fresh) == grpc.StatusCode.OK
        fresh.cancel()
    finally:
        for call in calls:
            call.cancel()
        service.stop()


def _eventually_open(stub: Any, call: Any) -> grpc.StatusCode:
    """The slot of a cancelled stream is released when the server sees the cancellation: retry briefly."""
    for _ in range(50):
        code = first_message(call)
        if code != grpc.StatusCode.RESOURCE_EXHAUSTED:
            return code
        call = stub.WatchResults(ipcount_pb2.WatchResultsRequest())
    return first_message(call)


def test_concurrent_audits_are_bounded(broker: EmbeddedBroker, tmp_path: Path, stubs: Any) -> None:
    held = HoldAt("audit.started")
    service = consumer(broker, tmp_path, faults=held)
    try:
        _, authenticated = stubs(service)
        request = ipcount_pb2.RunAuditRequest(generator=ipcount_pb2.GeneratorTruth(seed=1, count=10))
        futures = [authenticated.ipcounts.RunAudit.future(request, timeout=120) for _ in range(6)]
        limit = service.settings.audit.max_concurrent
        held.wait_held(limit, timeout=60)  # the admitted audits run, held at their start
        deadline = time.monotonic() + 30
        while sum(f.done() for f in futures) < 6 - limit and time.monotonic() < deadline:
            time.sleep(0.05)
        refused = [f for f in futures if f.done()]
        assert len(refused) == 6 - limit, "an audit finished while held, or one past the limit ran"
        for future in refused:
            assert future.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert f"audit.max_concurrent = {limit}" in (future.details() or "")
        assert held.held() == limit
        # cancelled, the held audits are stopped and give their slots back (once the server saw it)
        for future in futures:
            future.cancel()
        held.release()
        deadline = time.monotonic() + 30
        while True:
            try:
                assert authenticated.ipcounts.RunAudit(request, timeout=120).sinks
                break
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and time.monotonic() < deadline, exc
                time.sleep(0.1)
    finally:
        held.release()
        service.stop()


def test_hostile_arguments_to_the_extensions_service_are_refused_naming_them(
    broker: EmbeddedBroker, tmp_path: Path, stubs: Any
) -> None:
    service = consumer(broker, tmp_path)
    try:
        anonymous, authenticated = stubs(service)
        ipcounts = authenticated.ipcounts
        hostile: list[tuple[Callable[..., Any], Any, str]] = [
            (ipcounts.GetIpCounts, ipcount_pb2.GetIpCountsRequest(ip="1" * 100_000), "ip: "),
            (ipcounts.GetIpCounts, ipcount_pb2.GetIpCountsRequest(ip="10.0.0.1\nDROP TABLE results"), "ip: "),
            (ipcounts.GetIpCounts, ipcount_pb2.GetIpCountsRequest(ip="10.0.0.1", window_start_from_ms=-1),
             "window_start_from_ms"),
            (ipcounts.GetTopIps, ipcount_pb2.GetTopIpsRequest(limit=2**31 - 1), "limit: must be in 1..10000"),
            (ipcounts.GetTopIps, ipcount_pb2.GetTopIpsRequest(limit=1, window_start_ms=-(2**62)), "window_start_ms"),
            (lambda request, timeout: next(ipcounts.WatchResults(request, timeout=timeout)),
             ipcount_pb2.WatchResultsRequest(window_start_from_ms=-5), "window_start_from_ms"),
            (ipcounts.RunAudit, ipcount_pb2.RunAuditRequest(generator=ipcount_pb2.GeneratorTruth(seed=1, count=-1)),
             "generator.count"),
        ]  # fmt: skip
        for method, request, named in hostile:
            with pytest.raises(grpc.RpcError) as refused:
                method(request, timeout=10)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (named, refused.value)
            assert named in (refused.value.details() or ""), refused.value.details()

        # the mutating RPC of the extension's service is behind the consumer's token, like Results'
        audit = ipcount_pb2.RunAuditRequest(generator=ipcount_pb2.GeneratorTruth(seed=1, count=1))
        with pytest.raises(grpc.RpcError) as unauthenticated:
            anonymous.ipcounts.RunAudit(audit, timeout=10)
        assert unauthenticated.value.code() == grpc.StatusCode.UNAUTHENTICATED
        # and the service still answers
        assert ipcounts.GetTopIps(ipcount_pb2.GetTopIpsRequest(limit=1), timeout=10).counts == []
    finally:
        service.stop()
