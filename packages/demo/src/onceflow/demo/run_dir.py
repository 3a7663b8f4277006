"""The run directory of one demo run: its settings (``run.json``), configs, data and logs.

Layout (everything a run needs to be resumed lives here)::

    <run>/run.json          RunState: seed, events, rate, event-time start, ports, PostgreSQL
    <run>/config/           the config file of every service (rewritten at every start)
    <run>/data/<service>/   data dirs: broker log, SQLite databases, Spark checkpoint and staging, ...
    <run>/ready/            ready files the services write once they serve
    <run>/logs/<service>.log  stdout + stderr of every instance of the service (appended)
    <run>/logs/demo.log     the demo's own structured log (supervisor, chaos, progress)
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from onceflow.core.errors import InvalidConfig
from onceflow.core.process import free_ports

STATE_FILE = "run.json"

#: The ports of a run: gRPC/Kafka listeners and Prometheus endpoints.
PORT_NAMES = (
    "broker",
    "coordinator",
    "coordinator_metrics",
    "participant",
    "participant_metrics",
    "connect",
    "connect_metrics",
    "spark_metrics",
    "consumer",
    "consumer_metrics",
)


def assign_ports(ports: dict[str, int], names: Sequence[str]) -> None:
    """Give each of ``names`` a free port, distinct from one another and from every port in ``ports``
    (the run's services bind theirs only when they start, so a free port may already be one of them)."""
    ports.update(zip(names, free_ports(len(names), avoid=set(ports.values())), strict=True))


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


@dataclass
class RunState:
    """What identifies a run; written once at creation and read back by ``--resume``.

    ``event_time_start_ms`` is the event time of the generator's event 0 (the creation time, so
    results are live); with ``seed`` and ``events`` it fixes the ground truth of the run.
    """

    run_id: str
    seed: int
    events: int
    rate: float
    event_time_start_ms: int
    event_time_rate: int
    trigger_ms: int
    source_partitions: int = 2
    generator_tasks: int = 1
    postgres: str = "off"  # off | local | dsn
    postgres_dsn: str = ""
    #: ``--lakehouse``: a Delta Lake sink too.
    lakehouse: bool = False
    ports: dict[str, int] = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)
    #: ``--bootstrap-servers``: an existing Kafka instead of the embedded broker ("" = embedded), and the
    #: librdkafka properties every client of the run gets (``-X``).
    bootstrap_servers: str = ""
    kafka_properties: dict[str, str] = field(default_factory=dict)
    #: ``--service-property``: librdkafka properties of one service over ``kafka_properties`` (each
    #: service its own SASL login, so each runs as its own principal with its own ACLs).
    service_kafka_properties: dict[str, dict[str, str]] = field(default_factory=dict)
    #: ``--input``: the access-log file the run reads ("" = the generator), and how it ends.
    input_path: str = ""
    follow: bool = False
    #: With ``follow``: the input ends after this long without a new line (0 = never).
    idle_end_ms: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RunState:
        raw: dict[str, Any] = json.loads(text)
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in raw.items() if k in known})


class RunDir:
    """Paths of a run directory, and its persisted :class:`RunState`."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    @property
    def state_path(self) -> Path:
        return self.root / STATE_FILE

    def exists(self) -> bool:
        return self.state_path.is_file()

    def config(self, name: str) -> Path:
        return self.root / "config" / name

    def data(self, service: str) -> Path:
        path = self.root / "data" / service
        path.mkdir(parents=True, exist_ok=True)
        return path

    def ready_file(self, service: str) -> Path:
        return self.root / "ready" / f"{service}.json"

    def log(self, service: str) -> Path:
        return self.root / "logs" / f"{service}.log"

    def create(self, state: RunState) -> RunState:
        """Make the directory tree and write ``state`` (with fresh ports); refuses an existing run."""
        if self.exists():
            raise InvalidConfig("--run-dir", f"{self.root} already holds a run; use --resume to continue it")
        for sub in ("config", "data", "ready", "logs"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        state.ports = {}
        assign_ports(state.ports, PORT_NAMES)
        self.save(state)
        return state

    def load(self) -> RunState:
        """The persisted state; ports another process took meanwhile are replaced (and saved)."""
        if not self.exists():
            raise InvalidConfig("--run-dir", f"{self.root} holds no run ({STATE_FILE} is missing)")
        state = RunState.from_json(self.state_path.read_text())
        missing = [name for name in PORT_NAMES if name not in state.ports]
        taken = [name for name, port in state.ports.items() if not port_is_free(port)]
        for name in taken:
            del state.ports[name]
        assign_ports(state.ports, [*missing, *taken])
        if missing or taken:
            self.save(state)
        for sub in ("config", "data", "ready", "logs"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        return state

    def save(self, state: RunState) -> None:
        tmp = self.state_path.with_name(f".{STATE_FILE}.tmp")
        tmp.write_text(state.to_json())
        os.replace(tmp, self.state_path)


def default_run_root(base: Path | None = None) -> Path:
    """``./runs/<UTC timestamp>``."""
    return (base or Path.cwd() / "runs") / time.strftime("%Y%m%d-%H%M%S", time.gmtime())
