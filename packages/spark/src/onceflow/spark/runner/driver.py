"""The driver process: session, progress listener, metrics endpoint, signals and the restart loop."""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Final

from onceflow.core.logging import get_logger
from onceflow.core.metrics import serve_metrics
from onceflow.spark.exceptions import JobDefinitionError, RestartsExhausted, WriterFencedError
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.runner.attempt import start_query
from onceflow.spark.runner.listener import ProgressListener
from onceflow.spark.runner.metrics import JobMetrics
from onceflow.spark.runner.restart import RestartLoop
from onceflow.spark.runner.session import build_session
from onceflow.spark.source.topic import wait_for_topic

_log = get_logger(__name__)

EXIT_OK: Final = 0
#: The restart attempts ran out; the last error is printed.
EXIT_FAILED: Final = 1
EXIT_CONFIG: Final = 2
#: Another driver registered for the job (as the coordinator's own "fenced" exit code).
EXIT_FENCED: Final = 3


def run_job(settings: SparkJobSettings, *, master: str | None) -> int:
    """Run the job until SIGTERM/SIGINT (exit 0), fencing (3) or the last failed restart (1)."""
    metrics = JobMetrics()
    endpoint = (
        serve_metrics(metrics.metrics, settings.metrics.host, settings.metrics.port) if settings.metrics.port else None
    )
    spark = build_session(settings, master)
    spark.streams.addListener(ProgressListener(settings.job, metrics))
    loop = RestartLoop(
        settings.job,
        settings.restart.attempts,
        settings.restart.delay_ms / 1000,
        on_restart=lambda: metrics.restarts.labels(settings.job).inc(),
    )

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        _log.info("driver.stopping", job=settings.job, signal=signal.Signals(signum).name)
        loop.stop()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    _log.info("driver.started", job=settings.job, guarantee=settings.guarantee, master=spark.sparkContext.master)
    try:
        topic_config = settings.kafka.client_config()
        if wait_for_topic(topic_config, settings.source.topic, loop.stopping):
            loop.run(lambda: start_query(spark, settings))
        return EXIT_OK
    except WriterFencedError as exc:
        print(f"onceflow spark: {exc}", file=sys.stderr)
        return EXIT_FENCED
    except JobDefinitionError as exc:
        _log.error("driver.job_refused", job=settings.job, error=exc.detail)
        print(f"onceflow spark: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except RestartsExhausted as exc:
        print(f"onceflow spark: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if endpoint is not None:
            endpoint.stop()
        spark.stop()
