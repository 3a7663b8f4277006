"""A StreamingQueryListener that turns each micro-batch's progress into a log line and metrics."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pyspark.sql.streaming.listener import StreamingQueryListener

from onceflow.core.logging import get_logger
from onceflow.spark.runner.metrics import JobMetrics

_log = get_logger("onceflow.spark.progress")


def _epoch_ms(iso: str | None) -> int | None:
    if not iso:
        return None
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


class ProgressListener(StreamingQueryListener):
    """Logs ``query.progress`` with the job, batch, rates, duration, watermark, state rows and late drops."""

    def __init__(self, job: str, metrics: JobMetrics) -> None:
        self.job = job
        self.metrics = metrics

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - Spark's API
        _log.info("query.started", job=self.job, query=str(event.id), run=str(event.runId), name=event.name)

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802 - Spark's API
        progress = event.progress
        duration_ms = int(progress.durationMs.get("triggerExecution", 0))
        watermark_ms = _epoch_ms(progress.eventTime.get("watermark"))
        operators = list(progress.stateOperators or [])
        state_rows = sum(int(op.numRowsTotal) for op in operators)
        dropped = sum(int(op.numRowsDroppedByWatermark) for op in operators)
        m, job = self.metrics, self.job
        m.input_rows_per_second.labels(job).set(float(progress.inputRowsPerSecond or 0.0))
        m.processed_rows_per_second.labels(job).set(float(progress.processedRowsPerSecond or 0.0))
        m.batch_duration_seconds.labels(job).set(duration_ms / 1000)
        if watermark_ms is not None:
            m.watermark_seconds.labels(job).set(watermark_ms / 1000)
        m.state_rows.labels(job).set(state_rows)
        m.last_batch.labels(job).set(int(progress.batchId))
        m.input_rows.labels(job).inc(int(progress.numInputRows))
        m.batches.labels(job).inc()
        m.dropped_late.labels(job).inc(dropped)
        _log.info(
            "query.progress",
            job=job,
            batch=int(progress.batchId),
            input_rows=int(progress.numInputRows),
            input_rows_per_s=round(float(progress.inputRowsPerSecond or 0.0), 1),
            processed_rows_per_s=round(float(progress.processedRowsPerSecond or 0.0), 1),
            duration_ms=duration_ms,
            watermark=progress.eventTime.get("watermark", ""),
            state_rows=state_rows,
            dropped_late=dropped,
        )

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802 - Spark's API
        pass

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802 - Spark's API
        if event.exception:
            _log.error("query.failed", job=self.job, query=str(event.id), run=str(event.runId), error=event.exception)
        else:
            _log.info("query.stopped", job=self.job, query=str(event.id), run=str(event.runId))
