"""``onceflow participant``'s service: open the sinks, recover them, then serve the Participant RPCs."""

from __future__ import annotations

import threading
from functools import partial
from typing import Self

from onceflow.contract import Resolution, TransactionId
from onceflow.contract.clients import CoordinatorClient
from onceflow.contract.staging import StagingStore, install_store, probe_staging_root
from onceflow.contract.staging.confinement import StagingConfinement
from onceflow.core.errors import InvalidConfig
from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.core.logging import get_logger
from onceflow.core.service.endpoints import GrpcService, ServingEndpoints
from onceflow.proto.v1 import participant_pb2_grpc
from onceflow.sinks.base import SinkParticipant
from onceflow.sinks.server.factory import open_sink
from onceflow.sinks.server.metrics import ParticipantMetrics
from onceflow.sinks.server.recovery import CoordinatorOutcomes
from onceflow.sinks.server.servicer import SERVICE_NAME, ParticipantServicer
from onceflow.sinks.server.settings import ParticipantSettings

_log = get_logger(__name__)


class ParticipantServer(GrpcService):
    """Hosts the configured sinks behind one Participant gRPC server.

    A started server has resolved every transaction its sinks had prepared before it took new
    work: :meth:`start` does not return (and it answers only the read-only RPCs, health
    NOT_SERVING) until the coordinator has answered for each of them. :meth:`interrupt` (a signal)
    makes a recovery that is still waiting for the coordinator give up
    (:class:`~onceflow.sinks.server.recovery.RecoveryInterrupted`).
    """

    name = "participant"
    stop_grace_s = 5.0

    def __init__(
        self,
        settings: ParticipantSettings,
        *,
        metrics: ParticipantMetrics | None = None,
        faults: FaultInjector = NO_FAULTS,
    ) -> None:
        self.settings = settings
        self.metrics = metrics or ParticipantMetrics()
        self._faults = faults
        self.sinks: dict[str, SinkParticipant] = {}
        self._stop = threading.Event()
        # No bound on the wait for the stopped server: in-flight RPCs end within the grace or are cancelled.
        self.endpoints = ServingEndpoints(
            settings, self.metrics.service, service_names=[SERVICE_NAME], stop_wait_slack_s=None
        )

    def start(self) -> Self:
        """Open, recover and serve (:attr:`port` is the bound port).

        Steps:
            1. Check the staging roots and schemes (``staging``), install the staging store
               (``staging.s3``) and probe every root (:func:`probe_staging_root`: write, read and
               delete; a failure is :class:`StagingRootUnusable`), then open every configured sink.
            2. Serve (:class:`~onceflow.core.service.endpoints.ServingEndpoints`): the gRPC server
               (TLS/mTLS, health, reflection) with the servicer, answering only the read-only RPCs
               (health NOT_SERVING), and the Prometheus metrics when a metrics port is configured
               (recovery's progress is observable).
            3. Recover: resolve each sink's prepared transactions with the coordinator's decision,
               retrying with backoff while it is unreachable or undecided. Then take new work
               (health SERVING).
        """
        # Step 1
        staging = self.settings.staging
        confinement = StagingConfinement(staging.roots, staging.allowed_schemes)
        store = StagingStore(staging.s3)
        install_store(store)
        for root in staging.roots:
            probe_staging_root(root, store, service=self.name)
        for sink_settings in self.settings.sinks:
            sink = self.sinks[sink_settings.name] = open_sink(sink_settings)
            sink.faults = self._faults
        # Step 2
        servicer = ParticipantServicer(self.sinks, confinement, self.metrics, self._faults, recovering=True)
        self.endpoints.start(partial(participant_pb2_grpc.add_ParticipantServicer_to_server, servicer), serving=False)
        # Step 3
        self._recover()
        servicer.recovered()
        self.endpoints.set_serving(True)
        _log.info(
            "participant.serving",
            port=self.port,
            sinks=",".join(sink.record_name for sink in self.sinks.values()),
            tls=bool(self.settings.server.tls.cert),
        )
        return self

    def _recover(self) -> None:
        in_doubt = {name: sink.list_prepared() for name, sink in self.sinks.items()}
        total = sum(len(txns) for txns in in_doubt.values())
        if total == 0:
            return
        coordinator = self.settings.coordinator
        if not coordinator.target:
            raise InvalidConfig(
                "coordinator.target", f"is needed to resolve {total} prepared transactions, but it is not set"
            )
        with CoordinatorClient(coordinator.target, coordinator.tls) as client:
            outcomes = CoordinatorOutcomes(
                client,
                rpc_timeout_s=coordinator.rpc_timeout_s,
                initial_backoff_s=coordinator.initial_backoff_s,
                max_backoff_s=coordinator.max_backoff_s,
                stop=self._stop,
            )
            for name, sink in self.sinks.items():
                done: dict[TransactionId, Resolution] = sink.recover(outcomes)
                for outcome in done.values():
                    self.metrics.recovered.labels(name, outcome.value).inc()

    def stop(self, grace: float | None = 5.0) -> None:
        """End a waiting recovery, NOT_SERVING, stop serving (in-flight RPCs get ``grace`` seconds,
        and the stop waits for them) and close the sinks. Idempotent."""
        self._stop.set()
        self.endpoints.stop(grace, release=self._close_sinks)

    def _close_sinks(self) -> None:
        for sink in self.sinks.values():
            sink.close()
        self.sinks.clear()

    def interrupt(self) -> None:
        """Make a recovery that waits for the coordinator give up; safe in a signal handler."""
        self._stop.set()


def participant_service(settings: ParticipantSettings) -> ParticipantServer:
    """``onceflow participant``'s service: the server with the process's installed faults (a test
    plug-in's, :mod:`onceflow.core.faults`; none in production)."""
    from onceflow.core.faults import installed_faults

    return ParticipantServer(settings, faults=installed_faults("participant"))
