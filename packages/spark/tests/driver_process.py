"""``python -m onceflow.spark --config FILE`` as a child process tree, killed like a crash (kill -9).

The driver is a :class:`onceflow.core.process.ServiceProcess` started in a session of its own: the
Python driver, its JVM and Spark's Python workers are all processes of that session, so ``kill()``
SIGKILLs every one of them together, and ``wait()``/``stop()`` kill whatever outlives the driver.
The Python driver leads that session, which is how the sink's test crash
(:mod:`onceflow.testing.faults.spark`) finds the driver to kill from a Python worker.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Self

from onceflow.core.process import ServiceProcess


class DriverProcess(ServiceProcess):
    """One Spark driver at a time for ``config``; its output is appended to ``log_path``."""

    NAME = "driver"
    READY_FILE = None
    NEW_SESSION = True

    def __init__(self, config: Path, log_path: Path, argv: Sequence[str] | None = None) -> None:
        super().__init__(log_path.parent, log_path=log_path, stop_timeout=60.0)
        self.config = config
        self.argv = list(argv) if argv is not None else None

    def command(self) -> list[str]:
        """``python -m onceflow.spark --config FILE``, or the command line given (``onceflow job run``, ...)."""
        if self.argv is not None:
            return self.argv
        return [sys.executable, "-m", "onceflow.spark", "--config", str(self.config)]

    def start(self, env: Mapping[str, str] | None = None, *, wait: bool = False) -> Self:
        """Spawn a driver with ``env`` added to its environment (it is not waited for)."""
        self.env = dict(env or {})
        return super().start(wait=wait)

    @property
    def pid(self) -> int:
        pid = super().pid
        assert pid is not None, "no driver was started"
        return pid

    def log(self) -> str:
        """This driver's part of the log."""
        return self.log_since_start()

    def wait_for_log(self, needle: str, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.log():
            code = self.poll()
            if code is not None:
                raise AssertionError(f"driver exited ({code}) before {needle!r}:\n{self.log()[-4000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {needle!r} in the driver log within {timeout}s:\n{self.log()[-4000:]}")
            time.sleep(0.1)

    def stop(self, timeout: float | None = None) -> int:
        """SIGTERM the Python driver (graceful stop) and wait; kill -9 the session if it does not exit."""
        code = super().stop(timeout)
        assert code is not None, "no driver was started"
        return code
