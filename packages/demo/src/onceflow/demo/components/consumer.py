"""The read_committed results consumer and its Results API (``onceflow consumer``)."""

from __future__ import annotations

from typing import Any

from onceflow.core.topics import SINK_TOPIC
from onceflow.demo.components.base import HOST, ReadyFileComponent

CONSUMER_GROUP = "onceflow-demo-results"


class ConsumerComponent(ReadyFileComponent):
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
