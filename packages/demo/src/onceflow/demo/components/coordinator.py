"""The 2PC transaction coordinator (``onceflow coordinator``), logging its decisions to Kafka."""

from __future__ import annotations

from typing import Any

from onceflow.core.service import read_ready_file
from onceflow.demo.components.base import HOST, Component, onceflow_command
from onceflow.demo.supervisor import ChildProcess


class CoordinatorComponent(Component):
    """Deletes a batch's staged files once its transaction has ended (same staging root as the job)."""

    name = "coordinator"

    def settings(self) -> dict[str, Any]:
        return {
            "staging_root": str(self.context.staging_root),
            "prepare_timeout_ms": 30_000,
            "commit_wait_ms": 30_000,
            "server": {"host": HOST, "port": self.context.port("coordinator")},
            "kafka": self.context.kafka_settings(self.name),
            # The demo's broker is its own: the coordinator initialises the log on the first run.
            "transaction_log": {"backend": "kafka", "init_if_missing": True},
            "commit_retry": {"initial_backoff_ms": 100, "max_backoff_ms": 2000},
            "metrics": {"host": HOST, "port": self.context.port("coordinator_metrics")},
            "log": self.logging_settings(),
        }

    @property
    def ready_path(self) -> Any:
        return self.context.run.ready_file(self.name)

    def command(self) -> list[str]:
        return onceflow_command("coordinator", "--config", str(self.config_path), "--ready-file", str(self.ready_path))

    def prepare(self) -> None:
        super().prepare()
        self.ready_path.unlink(missing_ok=True)

    def probe(self, child: ChildProcess) -> bool:
        return read_ready_file(self.ready_path, child.pid) is not None
