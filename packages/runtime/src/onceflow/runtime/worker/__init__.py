"""The data plane: the worker and the task loops it runs."""

from onceflow.runtime.worker.at_least_once import WorkerSourceTask
from onceflow.runtime.worker.exactly_once import ExactlyOnceWorkerSourceTask, fence_zombies, transactional_id
from onceflow.runtime.worker.metrics import WorkerMetrics
from onceflow.runtime.worker.producer_stats import ProducerStats
from onceflow.runtime.worker.sink_task import WorkerSinkTask
from onceflow.runtime.worker.source_task import AbstractWorkerSourceTask
from onceflow.runtime.worker.task import TaskSetup, WorkerTask
from onceflow.runtime.worker.worker import Worker, WorkerConfig, connector_config_def

__all__ = [
    "AbstractWorkerSourceTask",
    "ExactlyOnceWorkerSourceTask",
    "ProducerStats",
    "TaskSetup",
    "Worker",
    "WorkerConfig",
    "WorkerMetrics",
    "WorkerSinkTask",
    "WorkerSourceTask",
    "WorkerTask",
    "connector_config_def",
    "fence_zombies",
    "transactional_id",
]
