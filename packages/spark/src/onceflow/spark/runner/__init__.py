"""Running the job: the driver's session, restart loop, progress listener and the ``onceflow spark`` CLI."""

from onceflow.spark.runner.attempt import register_driver, start_query
from onceflow.spark.runner.driver import EXIT_CONFIG, EXIT_FAILED, EXIT_FENCED, EXIT_OK, SparkDriverService
from onceflow.spark.runner.listener import ProgressListener
from onceflow.spark.runner.metrics import JobMetrics
from onceflow.spark.runner.restart import RestartLoop
from onceflow.spark.runner.session import build_session, register_data_sources

__all__ = [
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "EXIT_FENCED",
    "EXIT_OK",
    "JobMetrics",
    "ProgressListener",
    "RestartLoop",
    "SparkDriverService",
    "build_session",
    "register_data_sources",
    "register_driver",
    "start_query",
]
