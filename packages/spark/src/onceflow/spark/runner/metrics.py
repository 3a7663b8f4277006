"""Prometheus metrics of the Spark job, fed by the progress listener."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import Counter, Gauge

from onceflow.core.metrics import ServiceMetrics


@dataclass
class JobMetrics:
    """One gauge or counter per progress figure, labelled by job."""

    metrics: ServiceMetrics = field(default_factory=lambda: ServiceMetrics("spark"))

    def __post_init__(self) -> None:
        m = self.metrics
        self.input_rows_per_second: Gauge = m.gauge("input_rows_per_second", "Input rows/s of the last batch", ("job",))
        self.processed_rows_per_second: Gauge = m.gauge(
            "processed_rows_per_second", "Processed rows/s of the last batch", ("job",)
        )
        self.batch_duration_seconds: Gauge = m.gauge(
            "batch_duration_seconds", "Wall time of the last micro-batch", ("job",)
        )
        self.watermark_seconds: Gauge = m.gauge("watermark_seconds", "Event-time watermark (epoch seconds)", ("job",))
        self.state_rows: Gauge = m.gauge("state_rows", "Rows in the windowed aggregation's state", ("job",))
        self.last_batch: Gauge = m.gauge("last_batch_id", "Id of the last completed micro-batch", ("job",))
        self.input_rows: Counter = m.counter("input_rows", "Input rows processed", ("job",))
        self.batches: Counter = m.counter("batches", "Micro-batches completed", ("job",))
        self.dropped_late: Counter = m.counter(
            "rows_dropped_by_watermark", "Input rows dropped as too late (behind the watermark)", ("job",)
        )
        self.restarts: Counter = m.counter("restarts", "Query restarts by the restart loop", ("job",))
