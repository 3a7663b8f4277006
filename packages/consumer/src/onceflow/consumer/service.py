"""``onceflow consumer``: the results store, the consumer loop, the Results API and ``/metrics`` in one process."""

from __future__ import annotations

from typing import Final

import grpc

from onceflow.consumer.api import SERVICE_NAME, ResultsApi, ResultsServicer, TableQuery
from onceflow.consumer.extension import ExtensionService, extension_services, load_extensions
from onceflow.consumer.feed import ResultsFeed
from onceflow.consumer.loop import ConsumerMetrics, ResultsConsumer
from onceflow.consumer.settings import ConsumerSettings
from onceflow.consumer.store import ResultsStore, open_store
from onceflow.consumer.store.sql import preload_conversions
from onceflow.consumer.tables import StoredTables
from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.core.logging import get_logger
from onceflow.core.service import ExitStatus
from onceflow.core.service.endpoints import GrpcService, ServingEndpoints
from onceflow.proto.v1 import results_pb2_grpc

#: Exit codes of ``onceflow consumer``.
EXIT_OK: Final = 0
EXIT_CONSUMER_FAILED: Final = 4

_log = get_logger(__name__)


class ConsumerService(GrpcService):
    """One consumer instance: its store connections, the consumer loop thread, the gRPC server.

    The loop and the API use separate store connections, so queries never wait behind a batch's
    transaction longer than the database makes them. As a :class:`~onceflow.core.service.Service`
    it finishes on its own when the consumer loop fails (exit 4, fail-stop: a restart resumes from
    the stored offsets). ``faults`` reaches the injection point of work an extension runs (tests hold
    the example's audits there).
    """

    name = "consumer"

    def __init__(self, settings: ConsumerSettings, *, faults: FaultInjector = NO_FAULTS) -> None:
        self.settings = settings
        self._faults = faults
        self.extensions = load_extensions()
        self.tables = StoredTables.from_settings(settings, self.extensions)
        self.metrics = ConsumerMetrics()
        self.feed = ResultsFeed(settings.api.watch_queue_batches)
        self.endpoints = ServingEndpoints(
            settings, self.metrics.service, service_names=[SERVICE_NAME], max_workers=settings.api.max_workers
        )
        self._loop_store: ResultsStore | None = None
        self._api_store: ResultsStore | None = None
        self.consumer: ResultsConsumer | None = None
        self.services: list[ExtensionService] = []

    def start(self) -> ConsumerService:
        """Start serving.

        Steps:
            1. Open the store (creating its own tables) twice: one connection
               for the loop, one for queries; create or check every table with declared columns (a
               table that does not fit them is a configuration error naming the column). Build the
               extensions' services over the API (two serving one name: a configuration error).
            2. Start the consumer loop; it joins the group and seeks to the stored offsets on assignment.
               Meanwhile a thread loads what pyarrow's first conversion of rows needs
               (:func:`~onceflow.consumer.store.sql.preload_conversions`), so the first batch does
               not wait for it.
            3. Serve (:class:`~onceflow.core.service.endpoints.ServingEndpoints`): the gRPC server
               (TLS, authorization, stream limits, health, reflection) with the Results servicer and
               every extension's services, and ``/metrics`` when ``metrics.port`` is set.
        """
        settings = self.settings
        # Step 1
        self._loop_store = open_store(settings.store)
        self._api_store = open_store(settings.store, create_schema=False)
        for table in self.tables:
            if table.schema is not None:
                self._loop_store.prepare_table(table, table.schema)
        api = ResultsApi(settings, self._api_store, TableQuery(self.tables, self._api_store), self.feed, self._faults)
        self.services = extension_services(self.extensions, api, reserved=[SERVICE_NAME])
        # Step 2
        preload_conversions()
        self.consumer = ResultsConsumer(
            settings.kafka, settings.consumer, self._loop_store, tables=self.tables, feed=self.feed,
            metrics=self.metrics,
        ).start()  # fmt: skip
        # Step 3

        def add_servicers(server: grpc.Server) -> None:
            results_pb2_grpc.add_ResultsServicer_to_server(ResultsServicer(api), server)  # type: ignore[no-untyped-call]
            for service in self.services:
                service.add_to_server(service.servicer, server)

        self.endpoints.start(add_servicers, more_service_names=[s.name for s in self.services])
        _log.info(
            "consumer.serving", port=self.port, metrics_port=self.metrics_port, store=self._loop_store.description,
            group=settings.consumer.group_id, topics=",".join(self.tables.topics),
            tables=",".join(t.table for t in self.tables),
        )  # fmt: skip
        return self

    def stop(self, grace: float = 2.0) -> None:
        """NOT_SERVING; stop the loop (it commits its open batch and leaves the group) and close the
        extensions' services (their workers, such as the example's running audits) while the server
        still answers, so that their calls end; stop the server, close the stores. Idempotent."""
        self.endpoints.stop(grace, drain=self._drain, release=self._close_stores)

    def _drain(self) -> None:
        if self.consumer is not None:
            self.consumer.stop()
        for service in self.services:
            service.close()

    def _close_stores(self) -> None:
        for store in (self._loop_store, self._api_store):
            if store is not None:
                store.close()

    def finished(self) -> bool:
        return self.consumer is not None and self.consumer.stopped.is_set()

    def exit_status(self) -> ExitStatus:
        """0 while the loop runs or after it stopped cleanly, :data:`EXIT_CONSUMER_FAILED` when it failed."""
        failure = self.consumer.failure if self.consumer is not None else None
        if failure is None:
            return ExitStatus(EXIT_OK)
        return ExitStatus(EXIT_CONSUMER_FAILED, f"the consumer loop failed: {failure}")


def consumer_service(settings: ConsumerSettings) -> ConsumerService:
    """The command's service factory: the consumer with the process's installed faults (none in production)."""
    from onceflow.core.faults import installed_faults

    return ConsumerService(settings, faults=installed_faults("consumer"))
