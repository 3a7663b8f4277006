"""The Spark sink's crash point: ``ONCEFLOW_SPARK_TEST_CRASH_AFTER_COMMIT=<batch>`` in the driver's environment.

The writers of the ``onceflow-2pc`` sink reach ``commit-returned`` (ids ``job``, ``batch``) once a
batch's CommitTransaction returned COMMITTED, before Spark writes the batch to its commit log. The
crash comes after the first such commit of the named batch *or a later one*: a batch that staged no
row commits no transaction, so it never reaches the point. They
ask :func:`~onceflow.core.faults.installed_faults` for ``spark-sink`` once per process (Spark runs
the commits in Python workers of the driver's JVM, which inherit the driver's environment), which
calls :func:`from_env` (the ``spark-sink`` plug-in of this package).

The crash kills the whole driver: the Python driver first (its JVM exits with it), then this
process (``os._exit(137)``, as a SIGKILL would). Spark never logs the batch's commit, so the
restarted driver re-runs it and the coordinator answers COMMITTED. The driver is the leader of this
process's session (a test starts it in a session of its own, as ``DriverProcess`` does), and it is
killed only if it was itself started with the crash armed (this variable, same value, in its
environment): no other process is ever killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Final

from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.core.logging import get_logger
from onceflow.testing.faults.crash import CrashAt

CRASH_ENV: Final = "ONCEFLOW_SPARK_TEST_CRASH_AFTER_COMMIT"
#: The sink's point: a batch's CommitTransaction returned COMMITTED.
COMMIT_RETURNED: Final = "commit-returned"

_log = get_logger(__name__)


def from_env() -> FaultInjector:
    """A crash of the driver after the first commit of the batch :data:`CRASH_ENV` names or a later
    one, else none."""
    value = os.environ.get(CRASH_ENV, "").strip()
    if not value:
        return NO_FAULTS
    if not value.isdigit():
        raise ValueError(f"{CRASH_ENV}={value!r} is not a batch id (a number)")
    return CrashAt(COMMIT_RETURNED, from_ids={"batch": int(value)}, before_exit=kill_driver)


def kill_driver() -> None:
    """SIGKILL the driver: this process's session leader, if it is not this process and was started
    with the same crash armed; otherwise log why and kill nothing."""
    driver = os.getsid(0)
    if driver == os.getpid():
        return  # the driver itself crashes
    armed = f"{CRASH_ENV}={os.environ.get(CRASH_ENV, '')}".encode()
    try:
        environment = Path(f"/proc/{driver}/environ").read_bytes().split(b"\0")
    except OSError as exc:
        _log.error("fault.driver_unknown", session=driver, error=str(exc))
        return
    if armed not in environment:
        _log.error("fault.driver_unknown", session=driver, reason=f"the session leader has no {CRASH_ENV}")
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(driver, signal.SIGKILL)
