"""The coordinator service: the engine behind a gRPC server, with health, reflection and metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import grpc
from grpc_health.v1 import health

from onceflow.coordinator.engine import RecoveryReport, StagingCollector, TwoPhaseCommitEngine
from onceflow.coordinator.exceptions import CoordinatorFenced, CoordinatorStopped
from onceflow.coordinator.log.base import TransactionLog
from onceflow.coordinator.log.kafka import KafkaTransactionLog
from onceflow.coordinator.log.memory import MemoryTransactionLog
from onceflow.coordinator.metrics import CoordinatorMetrics
from onceflow.coordinator.participants import GrpcParticipantConnector, ParticipantConnector
from onceflow.coordinator.service.servicer import SERVICE_NAME, TransactionCoordinatorServicer
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.core.grpc import build_server
from onceflow.core.logging import get_logger
from onceflow.core.metrics import MetricsEndpoint, serve_metrics
from onceflow.core.service import ExitStatus, Service
from onceflow.core.staging import delete_batch
from onceflow.proto.v1 import coordinator_pb2_grpc

#: Exit codes of ``onceflow coordinator``.
EXIT_OK: Final = 0
EXIT_FENCED: Final = 3
EXIT_LOG_FAILED: Final = 4

_log = get_logger(__name__)


def transaction_log_for(settings: CoordinatorSettings) -> TransactionLog:
    """The configured :class:`TransactionLog` backend."""
    log_settings = settings.transaction_log
    if log_settings.backend == "memory":
        return MemoryTransactionLog()
    return KafkaTransactionLog(
        settings.kafka,
        topic=log_settings.topic,
        transactional_id=log_settings.transactional_id,
        replication_factor=log_settings.replication_factor,
        timeout=log_settings.timeout_ms / 1000,
        init_if_missing=log_settings.init_if_missing,
    )


def staging_collector_for(settings: CoordinatorSettings) -> StagingCollector | None:
    root = settings.staging_root
    if not root:
        return None
    return lambda job, batch: delete_batch(root, job, batch)


class CoordinatorServer(Service):
    """One coordinator instance: engine (with recovery), gRPC server and ``/metrics``.

    ``log`` and ``connector`` default to the configured backend and gRPC participants; tests pass
    in-memory ones. As a :class:`~onceflow.core.service.Service` it finishes on its own when it is
    fenced (exit 3) or its log fails (exit 4): its in-memory state may be stale then, and only a
    replay of the log tells the truth.
    """

    name = "coordinator"

    def __init__(
        self,
        settings: CoordinatorSettings,
        *,
        log: TransactionLog | None = None,
        connector: ParticipantConnector | None = None,
        faults: FaultInjector = NO_FAULTS,
    ) -> None:
        self.settings = settings
        self.metrics = CoordinatorMetrics()
        self.engine = TwoPhaseCommitEngine(
            log or transaction_log_for(settings),
            connector or GrpcParticipantConnector(settings.participant_tls),
            settings.engine_config(),
            metrics=self.metrics,
            staging_collector=staging_collector_for(settings),
            faults=faults,
        )
        self.health = health.HealthServicer()
        self._server: grpc.Server | None = None
        self._metrics_endpoint: MetricsEndpoint | None = None
        self.port = 0
        self.recovery: RecoveryReport | None = None

    @property
    def metrics_port(self) -> int:
        return self._metrics_endpoint.port if self._metrics_endpoint is not None else 0

    def start(self) -> CoordinatorServer:
        """Start serving.

        Steps:
            1. Open the transaction log (this fences any earlier coordinator instance), replay it
               and recover in-doubt transactions (see :func:`~onceflow.coordinator.engine.recovery.recover`).
            2. Build the gRPC server: TLS per ``server.tls``, health and reflection, then the
               TransactionCoordinator servicer; start it.
            3. Expose ``/metrics`` when ``metrics.port`` is set.
        """
        # Step 1
        self.recovery = self.engine.start()
        # Step 2
        server, self.port = build_server(
            self.settings.server,
            service_names=[SERVICE_NAME],
            max_workers=self.settings.max_workers,
            health_servicer=self.health,
        )
        coordinator_pb2_grpc.add_TransactionCoordinatorServicer_to_server(  # type: ignore[no-untyped-call]
            TransactionCoordinatorServicer(self.engine), server
        )
        server.start()
        self._server = server
        # Step 3
        if self.settings.metrics.port:
            self._metrics_endpoint = serve_metrics(
                self.metrics.service, self.settings.metrics.host, self.settings.metrics.port
            )
        _log.info(
            "coordinator.serving",
            port=self.port,
            metrics_port=self.metrics_port,
            log=self.engine.state.log_description,
            tls=bool(self.settings.server.tls.cert),
        )
        return self

    def stop(self, grace: float = 2.0) -> None:
        """Stop serving: NOT_SERVING, drain RPCs for ``grace`` seconds, close the engine."""
        self.health.enter_graceful_shutdown()
        if self._server is not None:
            self._server.stop(grace).wait(grace + 1)
            self._server = None
        if self._metrics_endpoint is not None:
            self._metrics_endpoint.stop()
            self._metrics_endpoint = None
        self.engine.close()

    def ready_info(self) -> Mapping[str, object]:
        return {"port": self.port, "metrics_port": self.metrics_port}

    def finished(self) -> bool:
        return self.engine.stopped.is_set()

    def exit_status(self) -> ExitStatus:
        """Why the engine stopped: 0 (running or closed), :data:`EXIT_FENCED` or :data:`EXIT_LOG_FAILED`."""
        failure = self.engine.state.failure
        if failure is None or isinstance(failure, CoordinatorStopped):
            return ExitStatus(EXIT_OK)
        return ExitStatus(EXIT_FENCED if isinstance(failure, CoordinatorFenced) else EXIT_LOG_FAILED, str(failure))
