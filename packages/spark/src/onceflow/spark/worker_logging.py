"""Structured logging inside Spark's Python workers (tasks, the sink's commit, the source's planner).

Those processes are started by the JVM, not by ``onceflow spark run``, so nothing configured their
logging. Their stderr ends up in the driver's (local mode) or executor's log.
"""

from __future__ import annotations

import logging
import os

from onceflow.core.logging import configure_logging

#: Level of the workers' logs; the driver exports its own level here before starting Spark.
LEVEL_ENV = "ONCEFLOW_SPARK_WORKER_LOG_LEVEL"


def ensure_worker_logging() -> None:
    """Configure key=value logging to stderr once per worker process (no-op where logging is set up)."""
    if logging.getLogger().handlers:
        return
    configure_logging(os.environ.get(LEVEL_ENV, "INFO"), "kv")
