"""The sink participants (``onceflow participant``): one server hosting the Kafka, SQLite and (optional)
PostgreSQL and Delta Lake sinks of the job."""

from __future__ import annotations

from typing import Any

from onceflow.core.topics import SINK_TOPIC
from onceflow.demo.components.base import HOST, ReadyFileComponent

#: Sink names, as the job registers them with the coordinator and the audit reports them.
KAFKA_SINK = "kafka"
SQLITE_SINK = "sqlite"
POSTGRES_SINK = "postgres"
DELTA_SINK = "delta"


class ParticipantComponent(ReadyFileComponent):
    name = "participant"

    def sink_names(self) -> list[str]:
        names = [KAFKA_SINK, SQLITE_SINK]
        if self.context.postgres_enabled:
            names.append(POSTGRES_SINK)
        if self.context.state.lakehouse:
            names.append(DELTA_SINK)
        return names

    def settings(self) -> dict[str, Any]:
        context = self.context
        sinks: list[dict[str, Any]] = [
            {
                "name": KAFKA_SINK,
                "kind": "kafka",
                "options": {
                    "topic": SINK_TOPIC,
                    "state_dir": str(context.run.data("participant") / "kafka"),
                    "kafka": context.kafka_settings(self.name),
                },
            },
            {"name": SQLITE_SINK, "kind": "sqlite", "options": {"path": str(context.sqlite_sink_path)}},
        ]
        if context.postgres_enabled:
            sinks.append({"name": POSTGRES_SINK, "kind": "postgres", "options": {"dsn": context.state.postgres_dsn}})
        if context.state.lakehouse:
            options = {"root": str(context.delta_root), "state_dir": str(context.run.data("participant") / "delta")}
            sinks.append({"name": DELTA_SINK, "kind": "delta", "options": options})
        return {
            "server": {"host": HOST, "port": context.port("participant")},
            "coordinator": {"target": context.target("coordinator"), "initial_backoff_s": 0.1, "max_backoff_s": 1.0},
            "sinks": sinks,
            "staging": {"roots": [str(context.staging_root)]},
            "metrics": {"host": HOST, "port": context.port("participant_metrics")},
            "log": self.logging_settings(),
        }
