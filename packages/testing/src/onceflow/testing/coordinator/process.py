"""Run a coordinator as a child process, for tests and single-machine runs.

``CoordinatorProcess`` is a :class:`onceflow.core.process.ServerProcess`: ``start()`` returns only
once the child serves gRPC (or raises with the tail of its log), ``kill()`` is a real ``kill -9``,
``start()`` after ``stop()``/``kill()`` reuses the same config and the same port, and child stderr is
appended to ``work_dir/coordinator.log``.
"""

from __future__ import annotations

from onceflow.core.process import ServerProcess

LOG_FILE = "coordinator.log"
CONFIG_FILE = "coordinator.toml"
READY_FILE = "ready.json"


class CoordinatorProcess(ServerProcess):
    """``python -m onceflow.coordinator`` configured by ``settings`` (the TOML structure as nested dicts).

    ``env`` adds environment variables, e.g. the crash hook
    ``{"ONCEFLOW_COORDINATOR_TEST_CRASH_AFTER": "commit-logged"}``.
    """

    NAME = "coordinator"
    MODULE = "onceflow.coordinator"
    LOG_FILE = LOG_FILE
    CONFIG_FILE = CONFIG_FILE
    READY_FILE = READY_FILE
