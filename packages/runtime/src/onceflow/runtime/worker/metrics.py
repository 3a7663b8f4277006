"""Prometheus metrics of a worker's tasks (``onceflow_connect_*``)."""

from __future__ import annotations

from onceflow.core.metrics import ServiceMetrics
from onceflow.runtime.status import TaskId
from onceflow.runtime.worker.producer_stats import ProducerStats


class WorkerMetrics:
    def __init__(self, metrics: ServiceMetrics | None = None) -> None:
        self.service = metrics or ServiceMetrics("connect")
        labels = ("connector", "task")
        self.records = self.service.counter("source_records_total", "records handed to the producer", labels)
        self.transactions = self.service.counter(
            "source_transactions_total", "source transactions by outcome", (*labels, "outcome")
        )
        self.commit_seconds = self.service.histogram("source_commit_seconds", "offset commit latency", labels)
        self.producer_id = self.service.gauge("source_producer_id", "producer id of the task's producer", labels)
        self.producer_epoch = self.service.gauge("source_producer_epoch", "epoch of the task's producer", labels)
        self.partition_messages = self.service.gauge(
            "source_partition_messages", "messages sent per partition (sequence progress)", (*labels, "partition")
        )

    def producer(self, task: TaskId, stats: ProducerStats) -> None:
        labels = (task.connector, str(task.task))
        self.producer_id.labels(*labels).set(stats.producer_id)
        self.producer_epoch.labels(*labels).set(stats.producer_epoch)
        for partition, messages in stats.partition_messages.items():
            self.partition_messages.labels(*labels, partition).set(messages)
