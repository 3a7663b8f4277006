"""The embedded broker (``onceflow broker``) on a fixed port, so clients reconnect to it after a restart."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from onceflow.broker.config import READY_FILE
from onceflow.core.service import read_ready_file, remove_ready_file
from onceflow.demo.components.base import HOST, Component, onceflow_command
from onceflow.demo.supervisor import ChildProcess


class BrokerComponent(Component):
    """Data in ``data/broker``; topics never expire by time (the demo's data is its evidence)."""

    name = "broker"

    @property
    def data_dir(self) -> Path:
        return self.context.run.data("broker")

    def settings(self) -> dict[str, Any]:
        return {
            "fsync": "interval",
            "auto_create_topics": True,
            "default_partitions": 1,
            "log_retention_ms": -1,
            "group_initial_rebalance_delay_ms": 0,
            "log": self.logging_settings(),
        }

    def command(self) -> list[str]:
        return onceflow_command(
            "broker",
            "--config",
            str(self.config_path),
            "--data-dir",
            str(self.data_dir),
            "--listen",
            self.context.bootstrap,
        )

    def prepare(self) -> None:
        super().prepare()
        remove_ready_file(self.data_dir / READY_FILE)

    def probe(self, child: ChildProcess) -> bool:
        info = read_ready_file(self.data_dir / READY_FILE, child.pid)
        if info is None:
            return False
        try:
            with socket.create_connection((HOST, info.port), timeout=1.0):
                return True
        except OSError:
            return False
