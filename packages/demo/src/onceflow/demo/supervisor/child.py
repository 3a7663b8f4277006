"""One supervised child process: a command, its environment, its log file and its whole process tree.

A child runs in a session of its own (``start_new_session``), so everything it spawns belongs to that
session: the Spark driver's JVM and Python workers (whose daemon moves to a process group of its own,
but stays in the session) included. :meth:`ChildProcess.kill` therefore SIGKILLs every member of the
session at once, which is what a machine crash or ``kill -9`` of the whole service looks like.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path


def session_members(sid: int) -> list[int]:
    """Pids of every live process in session ``sid`` (Linux ``/proc``; elsewhere just ``sid``)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return [sid] if _alive(sid) else []
    members: list[int] = []
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            stat = (proc / entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        # After "pid (comm)": state ppid pgrp session ...; a zombie is already dead.
        if int(fields[3]) == sid and fields[0] != "Z":
            members.append(int(entry))
    return members


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class ChildProcess:
    """A command run as a child process with stdout and stderr appended to ``log_path``.

    Guarantees: at most one instance runs at a time; :meth:`kill` leaves no process of the child's
    session behind; :meth:`log_since_start` is the log written by the current instance only.
    """

    name: str
    command: Sequence[str]
    log_path: Path
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _log_offset: int = field(default=0, init=False, repr=False)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> int:
        """Spawn the command in a new session; returns its pid."""
        if self.running():
            raise RuntimeError(f"{self.name} is already running with pid {self.pid}")
        self.reap_session()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                list(self.command),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
                cwd=self.cwd,
                start_new_session=True,
            )
        return self._process.pid

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def poll(self) -> int | None:
        """The exit code once the main process has exited, else None (also None before the first start)."""
        return self._process.poll() if self._process is not None else None

    def kill(self) -> None:
        """``kill -9`` the whole session (main process and everything it spawned), then reap it."""
        if self._process is None:
            return
        self.reap_session()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(10)

    def reap_session(self) -> None:
        """SIGKILL whatever is left of the last instance's session (e.g. a JVM that outlived its driver)."""
        if self._process is None:
            return
        sid = self._process.pid
        for _ in range(50):
            members = session_members(sid)
            if not members:
                return
            for pid in members:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)

    def stop(self, timeout: float = 20.0) -> int | None:
        """Graceful stop: SIGTERM to the main process, wait ``timeout``, then kill the session."""
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout)
        self.kill()
        return process.poll()

    def log_since_start(self, limit: int = 1_000_000) -> str:
        """What the current instance wrote to the log (at most the last ``limit`` characters)."""
        try:
            with self.log_path.open("rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(self._log_offset, size - limit))
                return handle.read().decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_since_start(200_000).splitlines()[-lines:])
