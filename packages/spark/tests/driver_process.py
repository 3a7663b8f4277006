"""``python -m onceflow.spark --config FILE`` as a child process tree, killed like a crash (kill -9).

The driver is started in a session of its own: the Python driver, its JVM and Spark's Python
workers (whose daemon moves to a process group of its own, but stays in the session) are all the
processes of that session, so ``kill()`` finds every one of them and SIGKILLs them together.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path


def session_members(sid: int) -> list[int]:
    """Pids of every live process in session ``sid``."""
    members: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[3]) == sid:  # fields after "pid (comm)": state ppid pgrp session ...
            members.append(int(entry))
    return members


class DriverProcess:
    """One Spark driver at a time for ``config``; stderr is appended to ``log_path``."""

    def __init__(self, config: Path, log_path: Path) -> None:
        self.config = config
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self._log_offset = 0

    def start(self, env: Mapping[str, str] | None = None) -> DriverProcess:
        assert self.process is None or self.process.poll() is not None, "a driver is already running"
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "onceflow.spark", "--config", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **dict(env or {})},
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def log(self) -> str:
        """This driver's part of the log."""
        if not self.log_path.exists():
            return ""
        with self.log_path.open("rb") as handle:
            handle.seek(self._log_offset)
            return handle.read().decode(errors="replace")

    def wait_for_log(self, needle: str, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.log():
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(
                    f"driver exited ({self.process.returncode}) before {needle!r}:\n{self.log()[-4000:]}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"no {needle!r} in the driver log within {timeout}s:\n{self.log()[-4000:]}")
            time.sleep(0.1)

    def wait(self, timeout: float) -> int:
        """Wait for the Python driver to exit; then kill whatever is left of its session."""
        assert self.process is not None
        code = self.process.wait(timeout)
        self._kill_session()
        return code

    def kill(self) -> None:
        """``kill -9`` the whole driver: Python driver, JVM and workers at once."""
        assert self.process is not None
        self._kill_session()
        self.process.wait(30)

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM the Python driver (graceful stop) and wait; kill -9 if it does not exit."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return -9

    def _kill_session(self) -> None:
        assert self.process is not None
        sid = self.process.pid
        for _ in range(20):
            members = session_members(sid)
            if not members:
                return
            for pid in members:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
