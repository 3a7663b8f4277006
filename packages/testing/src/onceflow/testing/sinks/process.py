"""Run a participant server as a child process, for tests, benchmarks and single-machine runs.

``ParticipantProcess`` guarantees, like :class:`onceflow.testing.coordinator.CoordinatorProcess`:

- the child is a real process (``python -m onceflow.sinks``), so ``kill()`` is a real ``kill -9``;
- ``start()`` after ``stop()``/``kill()`` reuses the same config and the same port, so a coordinator
  that registered the participant's target reaches the restarted server;
- ``start(wait=False)`` returns at once: a restarted participant does not listen until the
  coordinator has decided every transaction it had prepared, so it may have to wait for a
  coordinator that is itself still down; :meth:`wait_ready` waits for it later;
- child stdout and stderr are appended to ``work_dir/participant.log``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from onceflow.core.toml_writer import to_toml

LOG_FILE = "participant.log"
CONFIG_FILE = "participant.toml"
READY_FILE = "ready.json"


class ParticipantProcess:
    """A participant server child process configured by ``settings`` (ParticipantSettings as nested dicts).

    ``server.port`` 0 (the default here) picks a free port on the first start, reused afterwards.
    """

    def __init__(
        self,
        work_dir: Path,
        settings: Mapping[str, Any],
        *,
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 15.0,
    ) -> None:
        self.work_dir = Path(work_dir)
        self.settings: dict[str, Any] = dict(settings)
        server = dict(self.settings.get("server", {}))
        server.setdefault("host", "127.0.0.1")
        server.setdefault("port", 0)
        self.settings["server"] = server
        self.env: dict[str, str] = dict(env or {})
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._port = int(server["port"])
        self._last_returncode: int | None = None
        self.starts = 0

    @property
    def host(self) -> str:
        return str(self.settings["server"]["host"])

    @property
    def port(self) -> int:
        if self._port == 0:
            raise RuntimeError("participant has not been ready yet: its port is unknown")
        return self._port

    @property
    def target(self) -> str:
        """``host:port`` for gRPC channels (known after the first start)."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def log_path(self) -> Path:
        return self.work_dir / LOG_FILE

    @property
    def returncode(self) -> int | None:
        """Exit code of the last child (None while it runs or before it started)."""
        return self._process.poll() if self._process is not None else self._last_returncode

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no participant log>"

    def start(self, *, wait: bool = True) -> ParticipantProcess:
        """Spawn the child; with ``wait``, return once it serves (RuntimeError with its log if it does not)."""
        if self.is_running():
            raise RuntimeError(f"participant already running with pid {self.pid}")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        ready = self.work_dir / READY_FILE
        ready.unlink(missing_ok=True)
        settings = {**self.settings, "server": {**self.settings["server"], "port": self._port}}
        config = self.work_dir / CONFIG_FILE
        config.write_text(to_toml(settings))
        command = [sys.executable, "-m", "onceflow.sinks", "--config", str(config), "--ready-file", str(ready)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        with self.log_path.open("ab") as log_file:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, env=env
            )
        self.starts += 1
        if wait:
            self.wait_ready()
        return self

    def is_ready(self) -> bool:
        """True once the running child serves (it has written its ready file)."""
        return self._read_ready() is not None

    def _read_ready(self) -> dict[str, Any] | None:
        if self._process is None:
            return None
        try:
            info: dict[str, Any] = json.loads((self.work_dir / READY_FILE).read_text())
        except (OSError, ValueError):
            return None
        return info if info.get("pid") == self._process.pid else None

    def wait_ready(self, timeout: float | None = None) -> int:
        """Wait until the child serves and return its port; RuntimeError (with its log) otherwise."""
        if self._process is None:
            raise RuntimeError("participant is not running")
        limit = self._startup_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            info = self._read_ready()
            if info is not None:
                self._port = int(info["port"])
                return self._port
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"participant exited with code {self._process.returncode} during startup; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(0.02)
        raise RuntimeError(f"participant did not become ready in {limit}s:\n{self.log_tail()}")

    def wait(self, timeout: float) -> int:
        """Wait for the child to exit on its own; returns its exit code."""
        if self._process is None:
            raise RuntimeError("participant is not running")
        code = self._process.wait(timeout)
        self._last_returncode = code
        return code

    def stop(self) -> None:
        """Graceful stop: SIGTERM, then SIGKILL after ``stop_timeout``."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(self._stop_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._last_returncode = process.returncode
        self._process = None

    def kill(self) -> None:
        """``kill -9`` the child and reap it: no cleanup, no flush, exactly like a crash."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait()
        self._last_returncode = process.returncode
        self._process = None

    def __enter__(self) -> ParticipantProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
