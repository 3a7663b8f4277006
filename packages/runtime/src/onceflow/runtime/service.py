"""ConnectWorkerService: one worker process, wired from its settings.

Steps of :meth:`ConnectWorkerService.start`:
    1. Pick the backing stores for the mode: Kafka offsets always (so exactly-once tasks can commit
       offsets with their records); configs and statuses in memory (standalone) or in their topics.
    2. Build the worker (data plane) and the herder (control plane), and start the herder: it reads
       the stores and, in distributed mode, joins the group.
    3. Standalone: create the connectors named in the config files.
    4. Serve the admin gRPC API (with health and reflection) and the metrics endpoint
       (:class:`~onceflow.core.service.endpoints.ServingEndpoints`).
"""

from __future__ import annotations

from functools import partial
from typing import Self

from onceflow.core.kafka import Replication
from onceflow.core.logging import get_logger
from onceflow.core.metrics import ServiceMetrics
from onceflow.core.service.endpoints import GrpcService, ServingEndpoints
from onceflow.proto.v1 import connect_pb2, connect_pb2_grpc
from onceflow.runtime.admin.servicer import ConnectServicer
from onceflow.runtime.config.files import load_connector_file
from onceflow.runtime.config.worker_settings import WorkerSettings
from onceflow.runtime.herder.assignment import SlotMembership
from onceflow.runtime.herder.distributed import DistributedHerder
from onceflow.runtime.herder.herder import Herder
from onceflow.runtime.herder.standalone import StandaloneHerder
from onceflow.runtime.plugins import PluginRegistry
from onceflow.runtime.storage.configs import ConfigBackingStore, MemoryConfigBackingStore
from onceflow.runtime.storage.kafka_configs import KafkaConfigBackingStore
from onceflow.runtime.storage.kafka_offsets import KafkaOffsetBackingStore
from onceflow.runtime.storage.kafka_status import KafkaStatusBackingStore
from onceflow.runtime.storage.status import MemoryStatusBackingStore, StatusBackingStore
from onceflow.runtime.storage.stores import BackingStores
from onceflow.runtime.worker.metrics import WorkerMetrics
from onceflow.runtime.worker.worker import Worker, WorkerConfig

_log = get_logger(__name__)
SERVICE_NAME = connect_pb2.DESCRIPTOR.services_by_name["Connect"].full_name


class ConnectWorkerService(GrpcService):
    """One connect worker: stores, worker, herder, admin gRPC API and ``/metrics`` (see the module's Steps)."""

    name = "connect_worker"

    def __init__(self, settings: WorkerSettings, plugins: PluginRegistry | None = None) -> None:
        self.settings = settings
        self.plugins = plugins or PluginRegistry.discover()
        for spec in settings.extra_plugins:
            self.plugins.register_class(spec)
        self.worker_id = settings.resolved_worker_id()
        self.metrics = ServiceMetrics("connect")
        self.herder: Herder | None = None
        self.endpoints = ServingEndpoints(settings, self.metrics, service_names=[SERVICE_NAME], stop_wait_slack_s=None)

    def start(self) -> Self:
        s = self.settings
        client_config = dict(s.kafka.client_config())
        replication = Replication.of(s.kafka)
        # Step 1
        offsets = KafkaOffsetBackingStore(
            client_config, s.topics.offsets, partitions=s.topics.offsets_partitions, replication=replication
        )
        configs: ConfigBackingStore
        statuses: StatusBackingStore
        if s.mode == "distributed":
            skipped = self.metrics.counter(
                "internal_records_skipped_total", "records of an internal topic that could not be decoded", ("topic",)
            )
            for topic in (s.topics.configs, s.topics.status):
                skipped.labels(topic)

            def on_skipped(topic: str, key: str, reason: str) -> None:
                skipped.labels(topic).inc()

            configs = KafkaConfigBackingStore(
                client_config, s.topics.configs, on_skipped=on_skipped, replication=replication
            )
            statuses = KafkaStatusBackingStore(
                client_config,
                s.topics.status,
                partitions=s.topics.status_partitions,
                on_skipped=on_skipped,
                replication=replication,
            )
        else:
            configs, statuses = MemoryConfigBackingStore(), MemoryStatusBackingStore()
        # Step 2
        worker = Worker(
            WorkerConfig(
                worker_id=self.worker_id,
                client_config=client_config,
                offsets_topic=s.topics.offsets,
                exactly_once_source=s.exactly_once_source,
                producer_config=dict(s.producer),
                task_shutdown_timeout_s=s.task_shutdown_timeout_ms / 1000,
                allowed_paths=tuple(s.allowed_paths),
            ),
            self.plugins,
            offsets,
            statuses.put,
            WorkerMetrics(self.metrics),
        )
        stores = BackingStores(configs, statuses, offsets)
        if s.mode == "distributed":
            membership = SlotMembership(
                client_config,
                group_id=s.group_id,
                topic=s.topics.assignment,
                slots=s.task_slots,
                worker_id=self.worker_id,
                session_timeout_ms=s.session_timeout_ms,
                replication=replication,
            )
            self.herder = DistributedHerder(worker, stores, self.plugins, membership=membership)
        else:
            self.herder = StandaloneHerder(worker, stores, self.plugins)
        self.herder.start()
        # Step 3
        for path in s.connectors:
            name, config = load_connector_file(path)
            self.herder.put_connector_config(name, config)
        # Step 4
        self.endpoints.start(partial(connect_pb2_grpc.add_ConnectServicer_to_server, ConnectServicer(self.herder)))
        _log.info(
            "connect_worker.started",
            worker=self.worker_id,
            mode=s.mode,
            grpc_port=self.port,
            exactly_once=s.exactly_once_source,
            plugins=[p.name for p in self.plugins.plugins()],
        )
        return self

    def stop(self, grace: float = 2.0) -> None:
        """Graceful shutdown: NOT_SERVING, stop serving, stop the tasks (they commit), leave the group.

        Idempotent. The stopped herder stays readable (``herder.connector_offsets`` answers what the
        tasks committed, as a caller checking a graceful stop needs)."""
        self.endpoints.stop(grace, release=self._stop_herder)

    def _stop_herder(self) -> None:
        if self.herder is not None:
            self.herder.stop()
