"""The read_committed results consumer and its Results API (``onceflow consumer``)."""

from __future__ import annotations

from typing import Any

from onceflow.core.service import read_ready_file
from onceflow.core.topics import SINK_TOPIC
from onceflow.demo.components.base import HOST, Component, onceflow_command
from onceflow.demo.supervisor import ChildProcess

CONSUMER_GROUP = "onceflow-demo-results"


class ConsumerComponent(Component):
    """Store: SQLite in ``data/consumer``; static membership, so a restarted instance resumes at once."""

    name = "consumer"

    def settings(self) -> dict[str, Any]:
        context = self.context
        return {
            "kafka": context.kafka_settings(self.name),
            "consumer": {
                "topic": SINK_TOPIC,
                "group_id": CONSUMER_GROUP,
                "group_instance_id": "onceflow-demo-consumer-0",
            },
            "store": {"backend": "sqlite", "path": str(context.consumer_store_path)},
            "server": {"host": HOST, "port": context.port("consumer")},
            "metrics": {"host": HOST, "port": context.port("consumer_metrics")},
            "log": self.logging_settings(),
        }

    @property
    def ready_path(self) -> Any:
        return self.context.run.ready_file(self.name)

    def command(self) -> list[str]:
        return onceflow_command("consumer", "--config", str(self.config_path), "--ready-file", str(self.ready_path))

    def prepare(self) -> None:
        super().prepare()
        self.ready_path.unlink(missing_ok=True)

    def probe(self, child: ChildProcess) -> bool:
        return read_ready_file(self.ready_path, child.pid) is not None
