"""One supervised child process: a command, its environment, its log file and its whole process tree.

:class:`ChildProcess` is a :class:`onceflow.core.process.ServiceProcess` run in a session of its own,
so everything it spawns (the Spark driver's JVM and Python workers included) dies with it on
:meth:`ChildProcess.kill`: what a machine crash or ``kill -9`` of the whole service looks like.
The supervisor spawns it without waiting and probes readiness itself (each component's probe).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from onceflow.core.process import ServiceProcess, session_members

__all__ = ["ChildProcess", "session_members"]


class ChildProcess(ServiceProcess):
    """``command`` as a child process with stdout and stderr appended to ``log_path``.

    Guarantees: at most one instance runs at a time; :meth:`kill` leaves no process of the child's
    session behind; :meth:`log_since_start` (and :meth:`log_tail`) is the log of the current instance only.
    """

    READY_FILE = None
    NEW_SESSION = True

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        super().__init__(log_path.parent, name=name, log_path=log_path, env=env, cwd=cwd, stop_timeout=20.0)
        self._command = list(command)

    def command(self) -> list[str]:
        return self._command

    def running(self) -> bool:
        """True while the main process runs."""
        return self.is_running()

    def log_tail(self, lines: int = 40, *, since_start: bool = True) -> str:
        return super().log_tail(lines, since_start=since_start)
