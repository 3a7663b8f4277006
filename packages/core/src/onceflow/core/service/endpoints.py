"""What a gRPC service exposes, started and stopped in one order: :class:`ServingEndpoints`, and
:class:`GrpcService`, the :class:`~onceflow.core.service.Service` that has them.

Kept out of ``onceflow.core.service``'s ``__init__`` so that the command fronts (``onceflow --help``)
do not import gRPC: a service module imports ``onceflow.core.service.endpoints`` itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import grpc
from grpc_health.v1 import health, health_pb2

from onceflow.core.grpc import build_server
from onceflow.core.metrics import MetricsEndpoint, ServiceMetrics, serve_metrics
from onceflow.core.service.base import Service
from onceflow.core.settings import GrpcServerSettings, MetricsSettings


class EndpointSettings(Protocol):
    """The sections of a service's settings its endpoints read: ``[server]`` and ``[metrics]``."""

    @property
    def server(self) -> GrpcServerSettings: ...

    @property
    def metrics(self) -> MetricsSettings: ...


def _nothing() -> None:
    return


class ServingEndpoints:
    """A service's gRPC server, its health servicer and its ``/metrics`` endpoint.

    The service builds it in its constructor (:attr:`health` exists before :meth:`start`, for a part
    that flips it, such as the coordinator's standby), calls :meth:`start` once its domain objects
    can answer, and :meth:`stop` from its own ``stop``. ``stop_wait_slack_s`` bounds the wait for the
    stopped server to ``grace + stop_wait_slack_s`` seconds; ``None`` waits until every RPC ended.
    """

    def __init__(
        self,
        settings: EndpointSettings,
        metrics: ServiceMetrics,
        *,
        service_names: Sequence[str],
        max_workers: int = 16,
        stop_wait_slack_s: float | None = 1.0,
    ) -> None:
        self._server_settings = settings.server
        self._metrics_settings = settings.metrics
        self._metrics = metrics
        self._service_names = tuple(service_names)
        self._max_workers = max_workers
        self._stop_wait_slack_s = stop_wait_slack_s
        self.health = health.HealthServicer()
        self.port = 0
        self._server: grpc.Server | None = None
        self._metrics_endpoint: MetricsEndpoint | None = None
        self._stop_lock = threading.Lock()
        self._stopped = False

    @property
    def metrics_port(self) -> int:
        """The bound ``/metrics`` port; 0 when there is none (``metrics.port`` unset, or not started)."""
        return self._metrics_endpoint.port if self._metrics_endpoint is not None else 0

    def start(
        self,
        add_servicers: Callable[[grpc.Server], None],
        *,
        serving: bool = True,
        more_service_names: Sequence[str] = (),
    ) -> None:
        """Serve; :attr:`port` is the bound port.

        Steps:
            1. Bind the server (:func:`~onceflow.core.grpc.build_server`: TLS, auth, limits, health
               and reflection for ``service_names`` and ``more_service_names``, the services known
               only now, such as the consumer's extensions'); a port that cannot be bound raises
               here, before anything runs.
            2. Set the health of the server and of every service name: SERVING, or NOT_SERVING with
               ``serving=False`` (a service that recovers or waits for a leadership first, and
               calls :meth:`set_serving` later).
            3. Add the service's servicers (``add_servicers(server)``) and start the server.
            4. Expose ``/metrics`` when ``metrics.port`` is set.
        """
        # Step 1
        self._service_names = (*self._service_names, *more_service_names)
        server, port = build_server(
            self._server_settings,
            service_names=self._service_names,
            max_workers=self._max_workers,
            health_servicer=self.health,
        )
        self._server, self.port = server, port
        # Step 2
        if not serving:
            self.set_serving(False)
        # Step 3
        add_servicers(server)
        server.start()
        # Step 4
        metrics = self._metrics_settings
        if metrics.port:
            self._metrics_endpoint = serve_metrics(self._metrics, metrics.host, metrics.port)

    def set_serving(self, serving: bool) -> None:
        """The health of the server (``""``) and of every service name. Ignored once :meth:`stop` began."""
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("", *self._service_names):
            self.health.set(name, status)

    def stop(
        self,
        grace: float | None,
        *,
        drain: Callable[[], None] = _nothing,
        release: Callable[[], None] = _nothing,
    ) -> None:
        """Stop, in this order; the first call does it all, a second one returns at once.

        Safe when :meth:`start` failed half way or never ran: what was not started is skipped, and
        ``drain`` and ``release`` still run (they close what the service opened before).

        Steps:
            1. Health NOT_SERVING, for good (``enter_graceful_shutdown``: a later ``set`` is ignored,
               so a recovery or an election ending now cannot turn it back): clients and load
               balancers stop sending new work while the server still answers what is in flight.
            2. ``drain()``: the service's work that in-flight RPCs wait on (a consumer loop, the
               streams of a servicer), so that those RPCs end within the grace instead of at its end.
            3. Stop the server: in-flight RPCs get ``grace`` seconds (``None``: cancelled at once),
               then wait until it stopped, at most ``grace + stop_wait_slack_s`` seconds.
            4. ``release()``: what the RPCs used (engine, herder, sinks, stores); no RPC can reach it now.
            5. The ``/metrics`` endpoint last, so that the stop itself stays observable to the end.
        """
        with self._stop_lock:
            if self._stopped:
                return
            self._stopped = True
        # Step 1
        self.health.enter_graceful_shutdown()
        # Step 2
        drain()
        # Step 3
        if self._server is not None:
            stopped = self._server.stop(grace)
            slack = self._stop_wait_slack_s
            stopped.wait(None if slack is None else (grace or 0.0) + slack)
            self._server = None
        # Step 4
        release()
        # Step 5
        if self._metrics_endpoint is not None:
            self._metrics_endpoint.stop()
            self._metrics_endpoint = None


class GrpcService(Service):
    """A :class:`~onceflow.core.service.Service` whose gRPC server and ``/metrics`` are its
    :attr:`endpoints` (built in its constructor): it publishes their ports in the ready file."""

    endpoints: ServingEndpoints

    @property
    def port(self) -> int:
        """The bound gRPC port (0 before :meth:`start`)."""
        return self.endpoints.port

    @property
    def metrics_port(self) -> int:
        """The bound ``/metrics`` port (0 when there is none)."""
        return self.endpoints.metrics_port

    def ready_info(self) -> Mapping[str, object]:
        return {"port": self.port, "metrics_port": self.metrics_port}
