"""Test-only crash point: die between the coordinator's COMMITTED answer and Spark's commit log.

``ONCEFLOW_SPARK_TEST_CRASH_AFTER_COMMIT=<batch>`` makes the sink's ``commit`` for that batch kill
the whole driver right after CommitTransaction returned: the Python driver process (whose pid the
runner publishes in ``ONCEFLOW_SPARK_DRIVER_PID``; the JVM exits with it) and then this process
(``os._exit(137)``, as a SIGKILL would). Spark never writes the batch to its commit log, so the
restarted driver re-runs it and the coordinator answers COMMITTED.
"""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Final

CRASH_ENV: Final = "ONCEFLOW_SPARK_TEST_CRASH_AFTER_COMMIT"
DRIVER_PID_ENV: Final = "ONCEFLOW_SPARK_DRIVER_PID"
CRASH_EXIT_CODE: Final = 137


def crash_after_commit_if_requested(batch: int) -> None:
    """Kill the driver if the crash hook names ``batch``; otherwise do nothing."""
    if os.environ.get(CRASH_ENV, "").strip() != str(batch):
        return
    driver = os.environ.get(DRIVER_PID_ENV, "")
    if driver.isdigit() and int(driver) != os.getpid():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(driver), signal.SIGKILL)
    os._exit(CRASH_EXIT_CODE)
