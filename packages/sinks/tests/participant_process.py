"""Run the participant server as a real child process (``python -m onceflow.sinks``), for kill -9 tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from onceflow.core.contract.clients import ParticipantClient
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


class ParticipantProcess:
    """``python -m onceflow.sinks --config CONFIG`` as a child; ``kill()`` is a real SIGKILL."""

    def __init__(self, config: Path, workdir: Path) -> None:
        self.config = config
        self.ready_file = workdir / "participant.ready.json"
        self.log_path = workdir / "participant.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> ParticipantProcess:
        self.ready_file.unlink(missing_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "onceflow.sinks",
                    "--config",
                    str(self.config),
                    "--ready-file",
                    str(self.ready_file),
                ],
                stdout=log,
                stderr=log,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        return self

    def is_ready(self) -> bool:
        return self.ready_file.exists()

    def wait_ready(self, timeout: float = 60.0) -> int:
        """The port, once the child serves; fails with the log tail if it exits or takes too long."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready_file.exists():
                return int(json.loads(self.ready_file.read_text())["port"])
            if self.process.poll() is not None:
                raise AssertionError(f"participant exited with {self.process.returncode}:\n{self.log_tail()}")
            time.sleep(0.05)
        raise AssertionError(f"participant not ready within {timeout}s:\n{self.log_tail()}")

    def client(self) -> ParticipantClient:
        """A client of the serving participant (close it, or use ``with``)."""
        return ParticipantClient(f"127.0.0.1:{self.wait_ready()}")

    def kill(self) -> None:
        """SIGKILL: no cleanup, no flush, exactly like a crash."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self.process = None

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)
        self.process = None

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""
