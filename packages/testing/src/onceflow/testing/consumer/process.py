"""Run ``python -m onceflow.consumer`` as a child process, for tests and single-machine runs.

``ConsumerProcess`` is a :class:`onceflow.core.process.ServerProcess`: ``start()`` returns only once
the child serves gRPC (or raises with the tail of its log), ``kill()`` is a real ``kill -9``,
``start()`` after ``stop()``/``kill()`` reuses the same config and the same port, and child stderr is
appended to ``work_dir/consumer.log``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onceflow.core.process import ServerProcess
from onceflow.testing.faults.consumer import HOLD_DIR_ENV
from onceflow.testing.faults.hold import HoldAt

LOG_FILE = "consumer.log"
CONFIG_FILE = "consumer.toml"
READY_FILE = "ready.json"


class ConsumerProcess(ServerProcess):
    """A consumer child process configured by ``settings``; ``target`` is its Results API.

    ``stop()`` sends SIGTERM (commit the open batch, leave the group), SIGKILL after ``stop_timeout``.
    """

    NAME = "consumer"
    MODULE = "onceflow.consumer"
    LOG_FILE = LOG_FILE
    CONFIG_FILE = CONFIG_FILE
    READY_FILE = READY_FILE

    def __init__(
        self,
        work_dir: Path,
        settings: Mapping[str, Any],
        *,
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 20.0,
    ) -> None:
        super().__init__(work_dir, settings, env=env, startup_timeout=startup_timeout, stop_timeout=stop_timeout)


class HeldAuditsConsumerProcess(ConsumerProcess):
    """A consumer process whose audits are held at their start until ``hold.release()``: its
    environment names the hold's directory (:mod:`onceflow.testing.faults.consumer`)."""

    def __init__(
        self,
        work_dir: Path,
        settings: Mapping[str, Any],
        hold: HoldAt,
        *,
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 20.0,
    ) -> None:
        env = {**(env or {}), HOLD_DIR_ENV: hold.directory}
        super().__init__(work_dir, settings, env=env, startup_timeout=startup_timeout, stop_timeout=stop_timeout)
