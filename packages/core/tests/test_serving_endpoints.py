"""ServingEndpoints: a real gRPC server and ``/metrics`` on 127.0.0.1, started and stopped in order."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from onceflow.core.metrics import ServiceMetrics
from onceflow.core.service.endpoints import ServingEndpoints
from onceflow.core.settings import GrpcServerSettings, MetricsSettings

SERVICE = "onceflow.test.Endpoints"
EXTRA = "onceflow.test.KnownAtStart"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@dataclass(frozen=True)
class _Settings:
    server: GrpcServerSettings
    metrics: MetricsSettings


def _endpoints(metrics_port: int = 0) -> ServingEndpoints:
    server = GrpcServerSettings(host="127.0.0.1", port=0)
    settings = _Settings(server, MetricsSettings(host="127.0.0.1", port=metrics_port))
    return ServingEndpoints(
        settings,
        ServiceMetrics("endpoints_test"),
        service_names=[SERVICE],
        max_workers=4,
    )


def _no_servicers(server: grpc.Server) -> None:
    return


def _check(port: int, service: str = "") -> int:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        return int(stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status)


@pytest.fixture
def free_port() -> Iterator[int]:
    """A port some other listener holds for the test's duration."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_health_goes_not_serving_while_the_server_still_answers() -> None:
    endpoints = _endpoints()
    endpoints.start(_no_servicers)
    port = endpoints.port
    assert _check(port) == SERVING and _check(port, SERVICE) == SERVING
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service=SERVICE), timeout=10)
        assert next(watch).status == SERVING
        seen_while_draining: list[int] = []

        def drain() -> None:
            # Step 2 of the stop: the server still accepts calls, and already says NOT_SERVING.
            seen_while_draining.extend([_check(port), _check(port, SERVICE)])

        endpoints.stop(0.5, drain=drain)
        assert seen_while_draining == [NOT_SERVING, NOT_SERVING]
        assert next(watch).status == NOT_SERVING
    with pytest.raises(grpc.RpcError) as stopped:
        _check(port)
    assert stopped.value.code() == grpc.StatusCode.UNAVAILABLE


def test_serving_false_waits_for_set_serving_on_every_name_and_stop_wins_over_a_late_set() -> None:
    endpoints = _endpoints()
    endpoints.start(_no_servicers, serving=False, more_service_names=[EXTRA])
    try:
        assert [_check(endpoints.port, name) for name in ("", SERVICE, EXTRA)] == [NOT_SERVING] * 3
        endpoints.set_serving(True)
        assert [_check(endpoints.port, name) for name in ("", SERVICE, EXTRA)] == [SERVING] * 3

        def late_recovery() -> None:
            endpoints.set_serving(True)
            assert _check(endpoints.port, SERVICE) == NOT_SERVING

        endpoints.stop(0, drain=late_recovery)
    finally:
        endpoints.stop(0)


def test_a_second_stop_is_a_no_op() -> None:
    endpoints = _endpoints()
    endpoints.start(_no_servicers)
    calls: list[str] = []
    endpoints.stop(0, drain=lambda: calls.append("drain"), release=lambda: calls.append("release"))
    endpoints.stop(0, drain=lambda: calls.append("drain"), release=lambda: calls.append("release"))
    assert calls == ["drain", "release"]


def test_metrics_endpoint_stops_last() -> None:
    endpoints = _endpoints(metrics_port=_unused_port())
    assert endpoints.metrics_port == 0
    endpoints.start(_no_servicers)
    url = f"http://127.0.0.1:{endpoints.metrics_port}/metrics"
    scraped_on_release: list[int] = []

    def release() -> None:
        # Step 4: the gRPC server is gone, /metrics still answers.
        with pytest.raises(grpc.RpcError):
            _check(endpoints.port)
        scraped_on_release.append(urllib.request.urlopen(url, timeout=5).status)

    endpoints.stop(0, release=release)
    assert scraped_on_release == [200]
    assert endpoints.metrics_port == 0
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=5)


def test_a_stop_after_a_failed_start_does_not_raise(free_port: int) -> None:
    # The server is bound and started, then the metrics port is taken: start raises half way.
    endpoints = _endpoints(metrics_port=free_port)
    with pytest.raises(OSError):
        endpoints.start(_no_servicers)
    port = endpoints.port
    assert _check(port) == SERVING
    released: list[bool] = []
    endpoints.stop(0, release=lambda: released.append(True))
    assert released == [True]
    with pytest.raises(grpc.RpcError):
        _check(port)


def test_a_stop_after_a_start_that_failed_before_serving_does_not_raise() -> None:
    def broken(server: grpc.Server) -> None:
        raise RuntimeError("no servicer")

    endpoints = _endpoints()
    with pytest.raises(RuntimeError, match="no servicer"):
        endpoints.start(broken)
    endpoints.stop(0)
    never_started = _endpoints()
    never_started.stop(0)
    assert never_started.port == 0 and never_started.metrics_port == 0


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
