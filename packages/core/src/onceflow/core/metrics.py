"""Prometheus metrics helpers: a per-service registry and its HTTP exposition endpoint."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Final
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

#: Latency buckets (seconds) for RPCs and commits: 1 ms .. 10 s.
LATENCY_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass
class ServiceMetrics:
    """The metrics of one service, in a registry of its own (so tests can run several services)."""

    service: str
    registry: CollectorRegistry = field(default_factory=lambda: CollectorRegistry(auto_describe=True))

    def counter(self, name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
        return Counter(f"onceflow_{self.service}_{name}", doc, labels, registry=self.registry)

    def gauge(self, name: str, doc: str, labels: tuple[str, ...] = ()) -> Gauge:
        return Gauge(f"onceflow_{self.service}_{name}", doc, labels, registry=self.registry)

    def histogram(
        self, name: str, doc: str, labels: tuple[str, ...] = (), buckets: tuple[float, ...] = LATENCY_BUCKETS
    ) -> Histogram:
        return Histogram(f"onceflow_{self.service}_{name}", doc, labels, buckets=buckets, registry=self.registry)


@dataclass
class MetricsEndpoint:
    """A running ``/metrics`` HTTP endpoint."""

    server: WSGIServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def serve_metrics(metrics: ServiceMetrics, host: str = "127.0.0.1", port: int = 0) -> MetricsEndpoint:
    """Expose ``metrics`` at http://host:port/metrics (port 0 picks a free port)."""
    server, thread = start_http_server(port, addr=host, registry=metrics.registry)
    return MetricsEndpoint(server=server, thread=thread)
