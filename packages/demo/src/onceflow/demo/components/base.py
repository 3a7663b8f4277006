"""What every service of the demo has in common: where it lives in the run dir, and how it is probed.

A :class:`Component` knows how to configure one service (it writes the service's own config file,
the same format as ``services/<name>/``), how to start it (an ``onceflow <service>`` command line)
and how to tell that it serves (its ready file, or an RPC).
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onceflow.core.service import read_ready_file
from onceflow.core.settings import TlsSettings
from onceflow.core.toml_writer import to_toml
from onceflow.demo.run_dir import RunDir, RunState
from onceflow.demo.supervisor import ChildProcess, RestartPolicy, SupervisedService

HOST = "127.0.0.1"


@dataclass(frozen=True)
class Context:
    """The run every component belongs to, and the demo-wide options they share."""

    run: RunDir
    state: RunState
    log_level: str = "INFO"
    #: TLS and the bearer token of the demo's own gRPC calls (observer, probes); None: plaintext on loopback.
    tls: TlsSettings | None = None

    def port(self, name: str) -> int:
        return self.state.ports[name]

    def target(self, name: str) -> str:
        """``127.0.0.1:<port>`` of a named port."""
        return f"{HOST}:{self.port(name)}"

    @property
    def bootstrap(self) -> str:
        """The Kafka the run uses: ``--bootstrap-servers``, or the embedded broker of the run."""
        return self.state.bootstrap_servers or self.target("broker")

    @property
    def embedded_broker(self) -> bool:
        return not self.state.bootstrap_servers

    def kafka_settings(self, service: str) -> dict[str, Any]:
        """The ``[kafka]`` section of a service: bootstrap servers and librdkafka properties (``-X``,
        then the service's own ``--service-property``, e.g. its SASL login)."""
        properties = {**self.state.kafka_properties, **self.state.service_kafka_properties.get(service, {})}
        return {"bootstrap_servers": self.bootstrap, "properties": properties}

    def client_config(self) -> dict[str, str]:
        """librdkafka configuration for the demo's own clients."""
        return {"bootstrap.servers": self.bootstrap, **self.state.kafka_properties}

    @property
    def staging_root(self) -> Path:
        """Where the Spark job stages its output and the coordinator garbage-collects it."""
        return self.run.data("spark") / "staging"

    @property
    def sqlite_sink_path(self) -> Path:
        return self.run.data("participant") / "sink.db"

    @property
    def consumer_store_path(self) -> Path:
        return self.run.data("consumer") / "results.db"

    @property
    def delta_root(self) -> Path:
        """The Delta sink's root: one table per binding (the IP-count results: ``ip_counts``)."""
        return self.run.data("participant") / "lake"

    @property
    def postgres_enabled(self) -> bool:
        return self.state.postgres != "off" and bool(self.state.postgres_dsn)


def onceflow_command(*args: str) -> list[str]:
    """``onceflow <args>``: the console script next to this interpreter (independent of PATH)."""
    script = Path(sys.executable).parent / "onceflow"
    if script.is_file():
        return [str(script), *args]
    return [sys.executable, "-c", "import sys; from onceflow.cli.app import main; sys.exit(main())", *args]


class Component(ABC):
    """One service of the pipeline."""

    #: Name of the service (supervisor, logs, dashboard, chaos).
    name: str = ""

    def __init__(self, context: Context) -> None:
        self.context = context

    @abstractmethod
    def command(self) -> list[str]:
        """The command line of the service."""

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """The service's settings (its TOML config file as nested dicts)."""

    @abstractmethod
    def probe(self, child: ChildProcess) -> bool:
        """True once the current instance serves."""

    @property
    def config_path(self) -> Path:
        return self.context.run.config(f"{self.name}.toml")

    def prepare(self) -> None:
        """Before every start: write the config file (ports may change on resume) and clear stale state."""
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(to_toml(self.settings()))

    def env(self) -> dict[str, str]:
        return {}

    def child(self) -> ChildProcess:
        return ChildProcess(self.name, self.command(), self.context.run.log(self.name), env=self.env())

    def supervised(self, policy: RestartPolicy) -> SupervisedService:
        return SupervisedService(self.child(), self.probe, policy, before_start=self.prepare)

    def logging_settings(self) -> dict[str, str]:
        return {"level": self.context.log_level, "format": "kv"}


class ReadyFileComponent(Component):
    """A service run as ``onceflow <name> --config ... --ready-file ...``: it serves once its current
    instance has written the ready file (a stale one is removed before every start)."""

    @property
    def ready_path(self) -> Path:
        return self.context.run.ready_file(self.name)

    def command(self) -> list[str]:
        return onceflow_command(self.name, "--config", str(self.config_path), "--ready-file", str(self.ready_path))

    def prepare(self) -> None:
        super().prepare()
        self.ready_path.unlink(missing_ok=True)

    def probe(self, child: ChildProcess) -> bool:
        return read_ready_file(self.ready_path, child.pid) is not None
