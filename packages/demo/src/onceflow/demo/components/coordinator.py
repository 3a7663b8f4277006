"""The 2PC transaction coordinator (``onceflow coordinator``), logging its decisions to Kafka."""

from __future__ import annotations

from typing import Any

from onceflow.demo.components.base import HOST, ReadyFileComponent


class CoordinatorComponent(ReadyFileComponent):
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
