"""Worker: the data plane. It builds tasks from their configs and runs each on its own thread.

The worker decides nothing about *what* runs: the herder tells it to start, pause, resume and stop
tasks. Task statuses go to the listener the herder gives it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from onceflow.core.config_def import ConfigDef, ParsedConfig
from onceflow.core.logging import get_logger
from onceflow.runtime.api.connector import Connector, ConnectorType
from onceflow.runtime.api.sink import SinkTask
from onceflow.runtime.api.source import SourceTask
from onceflow.runtime.config.connector_config import (
    CONNECTOR_CLASS,
    PRODUCER_OVERRIDE_PREFIX,
    sink_config_def,
    source_config_def,
)
from onceflow.runtime.plugins import PluginRegistry
from onceflow.runtime.status import TargetState, TaskId
from onceflow.runtime.storage.offsets import OffsetBackingStore
from onceflow.runtime.worker.at_least_once import WorkerSourceTask
from onceflow.runtime.worker.exactly_once import ExactlyOnceWorkerSourceTask
from onceflow.runtime.worker.metrics import WorkerMetrics
from onceflow.runtime.worker.sink_task import WorkerSinkTask
from onceflow.runtime.worker.task import StatusListener, TaskSetup, WorkerTask

_log = get_logger(__name__)

#: Producer defaults of source tasks: batch well, keep a transaction's records in memory.
SOURCE_PRODUCER_DEFAULTS: Mapping[str, Any] = {
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
}


def connector_config_def(connector_class: type[Connector]) -> ConfigDef:
    """The runtime's settings for this kind of connector, then the connector's own."""
    base = source_config_def() if connector_class.connector_type is ConnectorType.SOURCE else sink_config_def()
    return base.merge(connector_class.config_def())


@dataclass(frozen=True)
class WorkerConfig:
    worker_id: str
    #: bootstrap.servers plus librdkafka passthrough properties, for every client.
    client_config: dict[str, Any]
    offsets_topic: str
    #: Source tasks run exactly once (transactional) or at least once (idempotent producer only).
    exactly_once_source: bool = True
    producer_config: dict[str, Any] = field(default_factory=dict)
    task_shutdown_timeout_s: float = 10.0
    #: Directories file-reading source tasks may read (handed to them in their context).
    allowed_paths: tuple[str, ...] = ()


class _TaskThatFailedToStart(WorkerTask):
    """Stands in for a task whose plugin or config is broken, so its status says FAILED and why."""

    def __init__(self, task_id: TaskId, worker_id: str, listener: StatusListener, error: Exception) -> None:
        super().__init__(task_id, worker_id, listener)
        self._error = error

    def initialize(self) -> None:
        raise self._error

    def execute(self) -> None:  # pragma: no cover - never reached
        pass

    def close(self, failed: bool) -> None:
        pass


class Worker:
    def __init__(
        self,
        config: WorkerConfig,
        plugins: PluginRegistry,
        offset_store: OffsetBackingStore,
        listener: StatusListener,
        metrics: WorkerMetrics | None = None,
    ) -> None:
        self.config = config
        self.plugins = plugins
        self.offset_store = offset_store
        self.metrics = metrics or WorkerMetrics()
        self._listener = listener
        self._lock = threading.Lock()
        self._tasks: dict[TaskId, WorkerTask] = {}

    @property
    def worker_id(self) -> str:
        return self.config.worker_id

    def tasks(self) -> dict[TaskId, WorkerTask]:
        with self._lock:
            return dict(self._tasks)

    def task(self, task_id: TaskId) -> WorkerTask | None:
        with self._lock:
            return self._tasks.get(task_id)

    def start_task(
        self,
        task_id: TaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        target: TargetState = TargetState.STARTED,
    ) -> WorkerTask:
        """Build and start a task; a task that cannot be built is started as FAILED, with the reason."""
        try:
            worker_task = self._build(task_id, connector_config, task_config, target)
        except Exception as exc:
            _log.error("task.build_failed", connector=task_id.connector, task=task_id.task, error=repr(exc))
            worker_task = _TaskThatFailedToStart(task_id, self.worker_id, self._listener, exc)
        with self._lock:
            if task_id in self._tasks:
                raise RuntimeError(f"task {task_id} is already on this worker")
            self._tasks[task_id] = worker_task
        _log.info(
            "task.starting",
            connector=task_id.connector,
            task=task_id.task,
            worker=self.worker_id,
            kind=type(worker_task).__name__,
            target=target.value,
        )
        worker_task.start()
        return worker_task

    def _build(
        self, task_id: TaskId, connector_config: Mapping[str, str], task_config: Mapping[str, str], target: TargetState
    ) -> WorkerTask:
        plugin = self.plugins.lookup(connector_config.get(CONNECTOR_CLASS, ""))
        parsed: ParsedConfig = connector_config_def(plugin.connector_class).parse(connector_config)
        task = plugin.connector_class.task_class()()
        if isinstance(task, SourceTask):
            producer_config = {
                **self.config.client_config,
                **SOURCE_PRODUCER_DEFAULTS,
                **self.config.producer_config,
                **parsed.with_prefix(PRODUCER_OVERRIDE_PREFIX),
            }
            source = TaskSetup(task_id, self.worker_id, self._listener, target, task, task_config, parsed)
            common: dict[str, Any] = {
                "producer_config": producer_config,
                "offset_store": self.offset_store,
                "client_config": self.config.client_config,
                "allowed_paths": self.config.allowed_paths,
            }
            if self.config.exactly_once_source:
                return ExactlyOnceWorkerSourceTask(
                    source, offsets_topic=self.config.offsets_topic, metrics=self.metrics, **common
                )
            return WorkerSourceTask(source, **common)
        if isinstance(task, SinkTask):
            sink = TaskSetup(task_id, self.worker_id, self._listener, target, task, task_config, parsed)
            return WorkerSinkTask(sink, consumer_config=self.config.client_config)
        raise TypeError(f"{type(task).__name__} is neither a SourceTask nor a SinkTask")

    def set_target_state(self, task_id: TaskId, target: TargetState) -> None:
        task = self.task(task_id)
        if task is not None:
            task.set_target_state(target)

    def stop_tasks(self, task_ids: list[TaskId], timeout: float | None = None) -> None:
        """Stop tasks and wait for them (all at once, so a slow one does not delay the others)."""
        with self._lock:
            tasks = [self._tasks.pop(t) for t in task_ids if t in self._tasks]
        for task in tasks:
            task.stop()
        wait = self.config.task_shutdown_timeout_s if timeout is None else timeout
        for task in tasks:
            if not task.await_stop(wait):
                _log.warning("task.stop_timeout", connector=task.id.connector, task=task.id.task, timeout_s=wait)
            else:
                _log.info("task.stopped", connector=task.id.connector, task=task.id.task, worker=self.worker_id)

    def stop(self) -> None:
        """Graceful shutdown: stop every task (committing what it has), waiting for each."""
        self.stop_tasks(list(self.tasks()))
