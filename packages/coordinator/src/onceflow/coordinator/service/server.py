"""The coordinator service: the engine behind a gRPC server, with health, reflection and metrics."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Final

import grpc
from grpc_health.v1 import health, health_pb2

from onceflow.coordinator.crash import coordinator_faults
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
    )


def staging_collector_for(settings: CoordinatorSettings) -> StagingCollector | None:
    root = settings.staging_root
    if not root:
        return None
    return lambda job, batch: delete_batch(root, job, batch)


class CoordinatorServer:
    """One coordinator instance: engine (with recovery), gRPC server and ``/metrics``.

    ``log`` and ``connector`` default to the configured backend and gRPC participants; tests pass
    in-memory ones.
    """

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
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        if self._server is not None:
            self._server.stop(grace).wait(grace + 1)
            self._server = None
        if self._metrics_endpoint is not None:
            self._metrics_endpoint.stop()
            self._metrics_endpoint = None
        self.engine.close()

    def exit_code(self) -> int:
        """Why the engine stopped: 0 (closed), :data:`EXIT_FENCED` or :data:`EXIT_LOG_FAILED`."""
        failure = self.engine.state.failure
        if failure is None or isinstance(failure, CoordinatorStopped):
            return EXIT_OK
        return EXIT_FENCED if isinstance(failure, CoordinatorFenced) else EXIT_LOG_FAILED


def write_ready_file(path: Path, server: CoordinatorServer) -> None:
    """Tell a parent process that the coordinator serves, and where (atomic replace)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), "port": server.port, "metrics_port": server.metrics_port}))
    os.replace(tmp, path)


def serve(settings: CoordinatorSettings, *, ready_file: Path | None = None) -> int:
    """Run a coordinator until SIGTERM/SIGINT, or until it is fenced or its log fails; return the exit code.

    A fenced coordinator (a newer instance opened the log) or one whose log failed logs a fatal
    line and exits non-zero at once: its in-memory state may be stale, and only a replay of the
    log tells the truth.
    """
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        _log.info("coordinator.signal", signal=signal.Signals(signum).name)
        stop.set()

    server = CoordinatorServer(settings, faults=coordinator_faults()).start()
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    if ready_file is not None:
        write_ready_file(ready_file, server)
    try:
        while not stop.is_set() and not server.engine.stopped.is_set():
            stop.wait(0.2)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    code = server.exit_code()
    if code != EXIT_OK:
        _log.error("coordinator.fatal", exit_code=code, error=server.engine.state.failure)
        server.stop(grace=0.5)
        return code
    server.stop()
    if ready_file is not None:
        ready_file.unlink(missing_ok=True)
    _log.info("coordinator.stopped")
    return EXIT_OK
