"""Run the participant server as a real child process (``python -m onceflow.sinks``), for kill -9 tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Self

from onceflow.contract.clients import ParticipantClient
from onceflow.core.process import ServiceProcess
from onceflow.core.toml_writer import to_toml


def write_config(
    path: Path,
    *,
    coordinator: str,
    sinks: list[dict[str, Any]],
    server: dict[str, Any] | None = None,
    staging_roots: list[str] | None = None,
) -> Path:
    """A participant TOML config: [server], [coordinator], [staging] and one [[sinks]] table per sink.

    ``staging_roots`` defaults to the config file's directory (the test's tmp_path, holding its staging root).
    """
    roots = staging_roots if staging_roots is not None else [str(path.parent)]
    settings = {
        "staging": {"roots": roots},
        "server": {"host": "127.0.0.1", "port": 0, **(server or {})},
        "coordinator": {"target": coordinator, "initial_backoff_s": 0.1, "max_backoff_s": 0.5},
        "sinks": [{"name": sink["name"], "kind": sink["kind"], "options": sink["options"]} for sink in sinks],
    }
    path.write_text(to_toml(settings))
    return path


class ParticipantProcess(ServiceProcess):
    """``python -m onceflow.sinks --config CONFIG`` as a child; ``kill()`` is a real SIGKILL."""

    NAME = "participant"
    LOG_FILE = "participant.log"
    READY_FILE = "participant.ready.json"

    def __init__(self, config: Path, workdir: Path) -> None:
        super().__init__(workdir, stop_timeout=15.0)
        self.config = config

    def command(self) -> list[str]:
        assert self.ready_path is not None
        return [
            sys.executable,
            "-m",
            "onceflow.sinks",
            "--config",
            str(self.config),
            "--ready-file",
            str(self.ready_path),
        ]

    def start(self, *, wait: bool = False) -> Self:
        """Spawn the child; it may not serve yet (recovery waits for the coordinator): see :meth:`wait_ready`."""
        return super().start(wait=wait)

    def client(self) -> ParticipantClient:
        """A client of the serving participant (close it, or use ``with``)."""
        return ParticipantClient(f"127.0.0.1:{self.wait_ready()}")
