"""Running the job: the driver's session, restart loop and progress listener (the driver service itself is
:class:`onceflow.spark.service.SparkDriverService`)."""

from onceflow.spark.runner.attempt import register_driver, start_query
from onceflow.spark.runner.listener import ProgressListener
from onceflow.spark.runner.metrics import JobMetrics
from onceflow.spark.runner.restart import RestartLoop
from onceflow.spark.runner.session import build_session, register_data_sources

__all__ = [
    "JobMetrics",
    "ProgressListener",
    "RestartLoop",
    "build_session",
    "register_data_sources",
    "register_driver",
    "start_query",
]
