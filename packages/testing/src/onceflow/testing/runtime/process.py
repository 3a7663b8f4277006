"""WorkerProcess: ``python -m onceflow.runtime`` as a child process, so tests can ``kill -9`` it."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc

from onceflow.contract.clients import ConnectClient
from onceflow.core.process import ServiceProcess, free_port
from onceflow.core.service import Readiness


class WorkerProcess(ServiceProcess):
    """A worker child process with its settings file, log file and admin port under ``directory``.

    ``settings`` are :class:`WorkerSettings` fields (nested tables as dicts, one level deep).
    ``allowed_paths`` defaults to ``directory``'s parent (a test's ``tmp_path``, where tests keep the
    files a file connector reads); pass ``allowed_paths`` to test the confinement itself. It is ready
    once its admin API answers.
    """

    NAME = "worker"
    LOG_FILE = "worker.log"
    CONFIG_FILE = "worker.toml"
    READY_FILE = None
    READY_POLL_INTERVAL = 0.1

    def __init__(self, directory: Path, settings: dict[str, Any], connector_files: list[Path] | None = None) -> None:
        super().__init__(directory, port=free_port(), stop_timeout=30.0)
        self.directory = directory
        self.settings = {
            "allowed_paths": [str(directory.parent)],
            **settings,
            "server": {"host": "127.0.0.1", "port": self._port, **settings.get("server", {})},
        }
        self.connector_files = [str(p) for p in connector_files or []]

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def config_settings(self) -> Mapping[str, Any]:
        return self.settings

    def command(self) -> list[str]:
        return [sys.executable, "-m", "onceflow.runtime", "--config", str(self.config_path), *self.connector_files]

    def probe_ready(self, pid: int) -> Readiness | None:
        with ConnectClient(self.target, timeout_s=2) as client:
            try:
                client.list_connectors()
            except grpc.RpcError:
                return None
        return Readiness(port=self._port)

    def client(self) -> ConnectClient:
        return ConnectClient(self.target, timeout_s=30)
