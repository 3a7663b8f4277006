"""Prometheus metrics of the results consumer (``onceflow_consumer_*``)."""

from __future__ import annotations

from onceflow.core.metrics import ServiceMetrics


class ConsumerMetrics:
    """Records and batches applied, lag, assignment and rebalances, in a registry of their own."""

    def __init__(self, metrics: ServiceMetrics | None = None) -> None:
        self.service = metrics or ServiceMetrics("consumer")
        self.records_applied = self.service.counter(
            "records_applied", "Records stored in their tables, by topic and partition", ("topic", "partition")
        )
        self.batches = self.service.counter(
            "batches", "Poll batches, by outcome (applied, stale: rolled back and re-read)", ("outcome",)
        )
        self.batch_seconds = self.service.histogram("batch_seconds", "Time to apply one batch (one DB transaction)")
        self.undecodable = self.service.counter(
            "undecodable_records",
            "Records that cannot be stored (undecodable, or not fitting their table; skipped or fatal)",
            ("topic", "partition"),
        )
        self.lag = self.service.gauge(
            "lag_records",
            "High watermark minus the stored next offset, by topic and partition (cached)",
            ("topic", "partition"),
        )
        self.assigned = self.service.gauge("assigned_partitions", "Partitions this instance owns")
        self.rebalances = self.service.counter("rebalances", "Rebalance callbacks, by kind", ("kind",))
