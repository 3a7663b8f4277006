"""The coordinator service: the engine behind a gRPC server, with health, reflection and metrics."""

from __future__ import annotations

from functools import partial
from typing import Final

from onceflow.contract import TransactionId
from onceflow.contract.staging import StagingStore, SymlinkRefused, delete_batch, install_store, probe_staging_root
from onceflow.coordinator.engine import RecoveryReport, StagingCollector, TwoPhaseCommitEngine
from onceflow.coordinator.exceptions import CoordinatorFenced, CoordinatorStopped, TransactionLogError
from onceflow.coordinator.log.base import TransactionLog
from onceflow.coordinator.log.kafka import KafkaTransactionLog
from onceflow.coordinator.log.memory import MemoryTransactionLog
from onceflow.coordinator.log.refusals import LogRefused
from onceflow.coordinator.metrics import CoordinatorMetrics
from onceflow.coordinator.participants import GrpcParticipantConnector, ParticipantConnector
from onceflow.coordinator.servicer import SERVICE_NAME, TransactionCoordinatorServicer
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.coordinator.standby import Standby
from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.core.logging import get_logger
from onceflow.core.service import EXIT_CONFIG, EXIT_START_FAILED, ExitStatus
from onceflow.core.service.endpoints import GrpcService, ServingEndpoints
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


def staging_collector_for(settings: CoordinatorSettings, store: StagingStore) -> StagingCollector | None:
    """Deletes a decided batch's staged files (never through a symlink: that is logged and left alone)."""
    root = settings.staging_root
    if not root:
        return None

    def collect(job: str, batch: int) -> None:
        try:
            delete_batch(root, job, batch, store=store)
        except SymlinkRefused as exc:
            _log.warning("staging.gc_refused", job=job, batch=batch, txn=TransactionId(job, batch), reason=str(exc))

    return collect


class CoordinatorServer(GrpcService):
    """One coordinator instance: engine (with recovery), gRPC server and ``/metrics``.

    ``log`` and ``connector`` default to the configured backend and gRPC participants; tests pass
    in-memory ones. As a :class:`~onceflow.core.service.Service` it finishes on its own when it is
    fenced or loses the leadership (exit 3) or its log fails (exit 4): its in-memory state may be
    stale then, and only a replay of the log tells the truth. With ``standby.enabled`` it serves
    only while it leads (:mod:`~onceflow.coordinator.standby`); a take-over refused by the
    log ends it with exit 2, as a refusal at start does.
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
        self._log = log or transaction_log_for(settings)
        self.store = StagingStore(settings.staging.s3)
        self.engine = TwoPhaseCommitEngine(
            self._log,
            connector or GrpcParticipantConnector(settings.participant_tls),
            settings.engine_config(),
            metrics=self.metrics,
            staging_collector=staging_collector_for(settings, self.store),
            faults=faults,
        )
        self.endpoints = ServingEndpoints(
            settings, self.metrics.service, service_names=[SERVICE_NAME], max_workers=settings.max_workers
        )
        self._recovery: RecoveryReport | None = None
        self._standby = Standby(self.engine, settings, self.endpoints.health) if settings.standby.enabled else None

    @property
    def recovery(self) -> RecoveryReport | None:
        """What recovery found when this instance took over its log (None while it has not)."""
        return self._standby.recovery if self._standby is not None else self._recovery

    def start(self) -> CoordinatorServer:
        """Start serving.

        Steps:
            1. Probe the staging root, when there is one (write, read and delete a probe object;
               :class:`~onceflow.contract.staging.StagingRootUnusable` otherwise); a standby too, since
               it collects staged files once it leads.
            2. Open the transaction log (this fences any earlier coordinator instance), replay it
               and recover in-doubt transactions (see :func:`~onceflow.coordinator.engine.recovery.recover`).
               A standby only checks that the log topic exists and is safe, fencing nobody.
            3. Serve (:class:`~onceflow.core.service.endpoints.ServingEndpoints`): the gRPC server
               (TLS per ``server.tls``, health and reflection) with the TransactionCoordinator
               servicer, NOT_SERVING for a standby; ``/metrics`` when ``metrics.port`` is set.
            4. A standby joins the election: it takes over (Step 2) once it leads.
        """
        # Step 1
        if self.settings.staging_root:
            install_store(self.store)
            probe_staging_root(self.settings.staging_root, self.store, service=self.name)
        # Step 2
        if self._standby is None:
            self._recovery = self.engine.start()
        elif isinstance(self._log, KafkaTransactionLog):
            self._log.check_topic()
        # Step 3
        self.endpoints.start(
            partial(
                coordinator_pb2_grpc.add_TransactionCoordinatorServicer_to_server,
                TransactionCoordinatorServicer(self.engine),
            ),
            serving=self._standby is None,
        )
        # Step 4
        if self._standby is not None:
            self._standby.start(self.advertised_target)
        _log.info(
            "coordinator.serving",
            port=self.port,
            metrics_port=self.metrics_port,
            log=self.engine.state.log_description,
            tls=bool(self.settings.server.tls.cert),
            standby=self._standby is not None,
        )
        return self

    @property
    def advertised_target(self) -> str:
        """Where clients reach this instance: ``standby.advertised_target``, else ``server.host:port``."""
        return self.settings.standby.advertised_target or f"{self.settings.server.host}:{self.port}"

    def stop(self, grace: float = 2.0) -> None:
        """Stop serving: NOT_SERVING, drain RPCs for ``grace`` seconds, close the engine, then leave
        the election (so a standby takes over at once, and fences nothing still in flight here).
        Idempotent."""
        self.endpoints.stop(grace, release=self._release)

    def _release(self) -> None:
        self.engine.close()
        if self._standby is not None:
            self._standby.close()

    def finished(self) -> bool:
        return self.engine.stopped.is_set() or (self._standby is not None and self._standby.failure is not None)

    def exit_status(self) -> ExitStatus:
        """Why the engine stopped: 0 (running or closed), :data:`EXIT_FENCED` (fenced, or lost the
        leadership), :data:`EXIT_LOG_FAILED`; a take-over the log refused is 2, as at start."""
        failure = self.engine.state.failure
        if isinstance(failure, CoordinatorFenced):
            return ExitStatus(EXIT_FENCED, str(failure))
        takeover = self._standby.failure if self._standby is not None else None
        if takeover is not None:
            if isinstance(takeover, LogRefused):
                return ExitStatus(EXIT_CONFIG, str(takeover))
            code = EXIT_LOG_FAILED if isinstance(takeover, TransactionLogError) else EXIT_START_FAILED
            return ExitStatus(code, f"the take-over failed: {takeover}")
        if failure is None or isinstance(failure, CoordinatorStopped):
            return ExitStatus(EXIT_OK)
        return ExitStatus(EXIT_LOG_FAILED, str(failure))


def coordinator_service(settings: CoordinatorSettings) -> CoordinatorServer:
    """``onceflow coordinator``'s service: the server with the process's installed faults (a test
    plug-in's, :mod:`onceflow.core.faults`; none in production)."""
    from onceflow.core.faults import installed_faults

    return CoordinatorServer(settings, faults=installed_faults("coordinator"))
