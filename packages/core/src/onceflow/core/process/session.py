"""A child's process session: every process it spawned, found and SIGKILLed together.

A child started in a session of its own (``start_new_session``) keeps everything it spawns in that
session: a Spark driver's JVM and Python workers (whose daemon moves to a process group of its own,
but stays in the session) included. :func:`kill_session` SIGKILLs every member at once, which is
what a machine crash or ``kill -9`` of the whole service looks like.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")


def session_members(sid: int) -> list[int]:
    """Pids of every live process in session ``sid`` (Linux ``/proc``; elsewhere just ``sid``)."""
    if not PROC.is_dir():
        return [sid] if is_alive(sid) else []
    members: list[int] = []
    for entry in os.listdir(PROC):
        if not entry.isdigit():
            continue
        try:
            stat = (PROC / entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        # After "pid (comm)": state ppid pgrp session ...; a zombie is already dead.
        if int(fields[3]) == sid and fields[0] != "Z":
            members.append(int(entry))
    return members


def session_cpu_seconds(sid: int) -> float:
    """User + system CPU seconds of every live process of session ``sid``, and of the children they
    reaped (a Spark daemon's exited Python workers, say): Linux ``/proc``, 0.0 elsewhere."""
    total = 0
    for pid in session_members(sid):
        try:
            stat = (PROC / str(pid) / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        # After "pid (comm)": ... utime stime cutime cstime are fields 14-17 of stat(5)
        total += sum(int(value) for value in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


def kill_session(sid: int, attempts: int = 50) -> None:
    """SIGKILL every process of session ``sid`` until none is left (or ``attempts`` rounds passed)."""
    for _ in range(attempts):
        members = session_members(sid)
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def is_alive(pid: int) -> bool:
    """True while a process ``pid`` exists (this user's or not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
