"""The sink's crash point, for tests: die between the coordinator's COMMITTED answer and Spark's commit log.

``ONCEFLOW_SPARK_TEST_CRASH_AFTER_COMMIT=<batch>`` makes the writers hand
:func:`~onceflow.spark.sink.transaction.commit_batch` a :class:`~onceflow.core.faults.CrashAt` for
:func:`commit_point` of that batch (:func:`driver_faults`; none in production). It kills the whole
driver right after CommitTransaction returned: the Python driver process (whose pid the runner
publishes in ``ONCEFLOW_SPARK_DRIVER_PID``; the JVM exits with it) and then this process
(``os._exit(137)``, as a SIGKILL would). Spark never writes the batch to its commit log, so the
restarted driver re-runs it and the coordinator answers COMMITTED.
"""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Final

from onceflow.core.faults import CRASH_EXIT_CODE, FaultInjector, faults_from_env

CRASH_ENV: Final = "ONCEFLOW_SPARK_TEST_CRASH_AFTER_COMMIT"
DRIVER_PID_ENV: Final = "ONCEFLOW_SPARK_DRIVER_PID"

__all__ = ["CRASH_ENV", "CRASH_EXIT_CODE", "DRIVER_PID_ENV", "commit_point", "driver_faults"]


def commit_point(batch: int | str) -> str:
    """The fault point reached when ``batch``'s CommitTransaction returned COMMITTED."""
    return f"commit-returned:{str(batch).strip()}"


def _kill_driver() -> None:
    driver = os.environ.get(DRIVER_PID_ENV, "")
    if driver.isdigit() and int(driver) != os.getpid():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(driver), signal.SIGKILL)


def driver_faults() -> FaultInjector:
    """The faults this process's environment asks for (none in production)."""
    return faults_from_env(CRASH_ENV, point=commit_point, before_exit=_kill_driver)
