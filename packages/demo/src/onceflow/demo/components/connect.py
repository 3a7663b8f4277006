"""The connect worker (``onceflow connect-worker``, standalone) running the run's source connector.

- The ``access-log-generator``: its settings come from the run's state, so a resumed run produces the
  same events; its task resumes after the last position committed with its records (KIP-618),
  never re-generating one. After its N events it ends the input.
- The ``access-log-file`` tailer over ``--input FILE``: read from the start; at the end of the file
  the input ends (``end.of.input=eof``), or with ``--follow`` it keeps tailing through rotation until
  ``--idle-timeout`` passes without a new line (``idle``), or for ever (``never``).

Ending the input writes end-of-input markers, which close every window of the Spark job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from onceflow.contract.clients import ConnectClient, RpcFailed
from onceflow.core.topics import DEAD_LETTER_TOPIC, SOURCE_TOPIC
from onceflow.demo.components.base import HOST, Component, onceflow_command
from onceflow.demo.supervisor import ChildProcess

GENERATOR = "access-log-generator"
FILE_CONNECTOR = "access-log-file"
#: Most an event's time lags the newest one before it; below the job's 5 s lateness.
MAX_DISORDER_MS = 3000


def generator_config(state: Any) -> dict[str, str]:
    """The connector config of the run's generator (also what the audit's generator truth needs)."""
    return {
        "connector.class": GENERATOR,
        "tasks.max": str(state.generator_tasks),
        "topic": SOURCE_TOPIC,
        "seed": str(state.seed),
        "count": str(state.events),
        "rate": repr(float(state.rate)),
        "batch.size": "1000",
        "event.time.start.ms": str(state.event_time_start_ms),
        "event.time.rate": str(state.event_time_rate),
        "max.disorder.ms": str(MAX_DISORDER_MS),
        "end.of.input": "eof",
        "transaction.boundary": "interval",
        "transaction.boundary.interval.ms": "100",
    }


def file_config(state: Any) -> dict[str, str]:
    """The connector config of a run over an access-log file (``--input``)."""
    if not state.follow:
        end = "eof"
    elif state.idle_end_ms > 0:
        end = "idle"
    else:
        end = "never"
    return {
        "connector.class": FILE_CONNECTOR,
        "file": state.input_path,
        "topic": SOURCE_TOPIC,
        "dead.letter.topic": DEAD_LETTER_TOPIC,
        "format": "auto",
        "end.of.input": end,
        "end.of.input.idle.ms": str(max(1, state.idle_end_ms)),
        "transaction.boundary": "interval",
        "transaction.boundary.interval.ms": "100",
    }


def connector_name(state: Any) -> str:
    """The name of the run's source connector."""
    return FILE_CONNECTOR if state.input_path else GENERATOR


def connector_config(state: Any) -> dict[str, str]:
    """The run's source connector: the file tailer with ``--input``, else the generator."""
    return file_config(state) if state.input_path else generator_config(state)


class ConnectComponent(Component):
    name = "connect"

    @property
    def connector_path(self) -> Any:
        return self.context.run.config("connector.json")

    def settings(self) -> dict[str, Any]:
        context = self.context
        return {
            "mode": "standalone",
            "exactly_once_source": True,
            "connectors": [str(self.connector_path)],
            # the tailer may read the --input file's directory (its rotated siblings included), no more
            "allowed_paths": [str(Path(context.state.input_path).parent)] if context.state.input_path else [],
            "kafka": context.kafka_settings(self.name),
            "producer": {"linger.ms": "20"},
            "server": {"host": HOST, "port": context.port("connect")},
            "metrics": {"host": HOST, "port": context.port("connect_metrics")},
            "log": self.logging_settings(),
        }

    def prepare(self) -> None:
        super().prepare()
        doc = {"name": connector_name(self.context.state), "config": connector_config(self.context.state)}
        self.connector_path.write_text(json.dumps(doc, indent=2) + "\n")

    def command(self) -> list[str]:
        return onceflow_command("connect-worker", "--config", str(self.config_path))

    def probe(self, child: ChildProcess) -> bool:
        try:
            with ConnectClient(self.context.target("connect"), self.context.tls, timeout_s=1.0) as client:
                listing = client.list_connectors()
        except RpcFailed:
            return False
        return connector_name(self.context.state) in listing.names
