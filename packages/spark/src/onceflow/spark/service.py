"""``onceflow spark run`` / ``onceflow job run``'s service, the driver process on the one serve loop: session,
progress listener, metrics, restart loop."""

from __future__ import annotations

import signal
import threading
from collections.abc import Mapping
from typing import Final, Self

from pyspark.sql import SparkSession

from onceflow.core.logging import get_logger
from onceflow.core.metrics import MetricsEndpoint, serve_metrics
from onceflow.core.service import ExitStatus, Service
from onceflow.spark.exceptions import JobDefinitionError, RestartsExhausted, WriterFencedError
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.runner.attempt import start_query
from onceflow.spark.runner.listener import ProgressListener
from onceflow.spark.runner.metrics import JobMetrics
from onceflow.spark.runner.object_store import prepare_staging
from onceflow.spark.runner.restart import RestartLoop
from onceflow.spark.runner.session import build_session, submitted_master
from onceflow.spark.runner.topology import check_shared_storage
from onceflow.spark.source.topic import wait_for_topic

_log = get_logger(__name__)

EXIT_OK: Final = 0
#: The restart attempts ran out; the last error is printed.
EXIT_FAILED: Final = 1
EXIT_CONFIG: Final = 2
#: Another driver registered for the job (as the coordinator's own "fenced" exit code).
EXIT_FENCED: Final = 3


class SparkDriverService(Service):
    """One job's Spark driver: runs until SIGTERM/SIGINT (exit 0), fencing (3), a job that cannot run as
    defined (2) or the last failed restart (1); it finishes on its own in the last three cases."""

    name = "driver"

    def __init__(self, settings: SparkJobSettings, *, master: str | None) -> None:
        self.settings = settings
        self.master = master
        self.metrics = JobMetrics()
        self.loop = RestartLoop(
            settings.job,
            settings.restart.attempts,
            settings.restart.delay_ms / 1000,
            on_restart=lambda: self.metrics.restarts.labels(settings.job).inc(),
        )
        self._endpoint: MetricsEndpoint | None = None
        self._spark: SparkSession | None = None
        self._thread: threading.Thread | None = None
        self._status = ExitStatus(EXIT_OK)

    def start(self) -> Self:
        """Start the driver.

        Steps:
            1. Refuse a local checkpoint or staging root on a multi-host master unless declared
               shared (:func:`check_shared_storage`: ``InvalidConfig``, exit 2), before any JVM
               starts when the master is known (``--master`` or settings; spark-submit's otherwise).
            2. Probe the staging root and share its store with the Spark processes
               (:func:`~onceflow.spark.runner.object_store.prepare_staging`; an unusable root is
               ``StagingRootUnusable``: exit 2 with one line naming the root and the cause).
            3. Expose ``/metrics`` when ``metrics.port`` is set.
            4. Build the Spark session (its JVM) and add the progress listener. PySpark installs a
               SIGINT handler of its own there; the serve loop's is put back.
            5. Run the restart loop on a thread: wait for the source topic, then start the query
               from its checkpoint and restart it after failures.
        """
        settings = self.settings
        # Step 1
        check_shared_storage(settings, self.master if self.master is not None else submitted_master())
        # Step 2
        prepare_staging(settings)
        # Step 3
        if settings.metrics.port:
            self._endpoint = serve_metrics(self.metrics.metrics, settings.metrics.host, settings.metrics.port)
        # Step 4
        sigint = signal.getsignal(signal.SIGINT)
        spark = self._spark = build_session(settings, self.master)
        signal.signal(signal.SIGINT, sigint)
        spark.streams.addListener(ProgressListener(settings.job, self.metrics))
        # Step 5
        self._thread = threading.Thread(target=self._run, name="restart-loop", daemon=True)
        self._thread.start()
        _log.info("driver.started", job=settings.job, guarantee=settings.guarantee, master=spark.sparkContext.master)
        return self

    def _run(self) -> None:
        settings, spark = self.settings, self._spark
        assert spark is not None
        try:
            if wait_for_topic(settings.kafka.client_config(), settings.source.topic, self.loop.stopping):
                self.loop.run(lambda: start_query(spark, settings))
        except WriterFencedError as exc:
            self._status = ExitStatus(EXIT_FENCED, str(exc))
        except JobDefinitionError as exc:
            _log.error("driver.job_refused", job=settings.job, error=exc.detail)
            self._status = ExitStatus(EXIT_CONFIG, str(exc))
        except RestartsExhausted as exc:
            self._status = ExitStatus(EXIT_FAILED, str(exc))
        except Exception as exc:
            _log.error("driver.failed", job=settings.job, error=exc)
            self._status = ExitStatus(EXIT_FAILED, f"{type(exc).__name__}: {exc}")

    def interrupt(self) -> None:
        self.loop.stop()

    def finished(self) -> bool:
        return self._thread is not None and not self._thread.is_alive()

    def exit_status(self) -> ExitStatus:
        return self._status

    def ready_info(self) -> Mapping[str, object]:
        return {"port": 0, "metrics_port": self._endpoint.port if self._endpoint is not None else 0}

    def stop(self, grace: float = 2.0) -> None:
        """Stop the query (the restart loop ends), the metrics endpoint and the session."""
        self.loop.stop()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._endpoint is not None:
            self._endpoint.stop()
            self._endpoint = None
        if self._spark is not None:
            self._spark.stop()
            self._spark = None


def driver_service(settings: SparkJobSettings) -> SparkDriverService:
    """``onceflow spark run`` / ``onceflow job run``'s service: the driver on ``spark.master``."""
    return SparkDriverService(settings, master=settings.spark.master)


def submitted_driver_service(settings: SparkJobSettings) -> SparkDriverService:
    """The service of :mod:`onceflow.spark.submit`: the driver on the master spark-submit gave."""
    return SparkDriverService(settings, master=None)
