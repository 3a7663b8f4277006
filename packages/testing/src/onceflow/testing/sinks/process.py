"""Run a participant server as a child process, for tests, benchmarks and single-machine runs.

``ParticipantProcess`` is a :class:`onceflow.core.process.ServerProcess`:

- the child is a real process (``python -m onceflow.sinks``), so ``kill()`` is a real ``kill -9``;
- ``start()`` after ``stop()``/``kill()`` reuses the same config and the same port, so a coordinator
  that registered the participant's target reaches the restarted server;
- ``start(wait=False)`` returns at once: a restarted participant takes no new work (and is not
  ready) until the coordinator has decided every transaction it had prepared, so it may have to
  wait for a coordinator that is itself still down; :meth:`wait_ready` waits for it later;
- child stdout and stderr are appended to ``work_dir/participant.log``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onceflow.core.process import ServerProcess

LOG_FILE = "participant.log"
CONFIG_FILE = "participant.toml"
READY_FILE = "ready.json"


class ParticipantProcess(ServerProcess):
    """A participant server child process configured by ``settings`` (ParticipantSettings as nested dicts)."""

    NAME = "participant"
    MODULE = "onceflow.sinks"
    LOG_FILE = LOG_FILE
    CONFIG_FILE = CONFIG_FILE
    READY_FILE = READY_FILE
    STDOUT_TO_LOG = True
    READY_POLL_INTERVAL = 0.02

    def __init__(
        self,
        work_dir: Path,
        settings: Mapping[str, Any],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 15.0,
    ) -> None:
        super().__init__(
            work_dir, settings, env=env, cwd=cwd, startup_timeout=startup_timeout, stop_timeout=stop_timeout
        )
