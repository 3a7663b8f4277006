"""Run ``python -m onceflow.consumer`` as a child process, for tests and single-machine runs.

``ConsumerProcess`` guarantees, like :class:`onceflow.broker.embedded.EmbeddedBroker`:

- ``start()`` returns only once the child serves gRPC (or raises with the tail of its log);
- the child is a real process, so ``kill()`` is a real ``kill -9``;
- ``start()`` after ``stop()``/``kill()`` reuses the same config and the same port;
- child stderr is appended to ``work_dir/consumer.log``.
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

LOG_FILE = "consumer.log"
CONFIG_FILE = "consumer.toml"
READY_FILE = "ready.json"


class ConsumerProcess:
    """A consumer child process configured by ``settings`` (the TOML structure as nested dicts).

    ``server.port`` 0 (the default here) picks a free port on the first start, reused afterwards.
    """

    def __init__(
        self,
        work_dir: Path,
        settings: Mapping[str, Any],
        *,
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 20.0,
    ) -> None:
        self.work_dir = Path(work_dir)
        self.settings: dict[str, Any] = dict(settings)
        server = dict(self.settings.get("server", {}))
        server.setdefault("host", "127.0.0.1")
        server.setdefault("port", 0)
        self.settings["server"] = server
        self.env = dict(env or {})
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._port = int(server["port"])
        self.metrics_port = 0
        self.starts = 0

    @property
    def target(self) -> str:
        """``host:port`` of the Results API."""
        if self._port == 0:
            raise RuntimeError("consumer has not been started yet")
        return f"{self.settings['server']['host']}:{self._port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def log_path(self) -> Path:
        return self.work_dir / LOG_FILE

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no consumer log>"

    def start(self) -> ConsumerProcess:
        """Spawn the child and wait until it serves; RuntimeError (with its log) if it does not."""
        if self.is_running():
            raise RuntimeError(f"consumer already running with pid {self.pid}")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        ready = self.work_dir / READY_FILE
        ready.unlink(missing_ok=True)
        settings = {**self.settings, "server": {**self.settings["server"], "port": self._port}}
        config = self.work_dir / CONFIG_FILE
        config.write_text(to_toml(settings))
        command = [sys.executable, "-m", "onceflow.consumer", "--config", str(config), "--ready-file", str(ready)]
        with self.log_path.open("ab") as log_file:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_file,
                env={**os.environ, **self.env},
            )  # fmt: skip
        self.starts += 1
        self._wait_ready(ready)
        return self

    def _wait_ready(self, ready: Path) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self._startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"consumer exited with code {self._process.returncode} during startup; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            try:
                info = json.loads(ready.read_text())
            except (OSError, ValueError):
                time.sleep(0.05)
                continue
            if info.get("pid") == self._process.pid:
                self._port = int(info["port"])
                self.metrics_port = int(info.get("metrics_port", 0))
                return
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"consumer did not become ready in {self._startup_timeout}s:\n{self.log_tail()}")

    def stop(self) -> int | None:
        """Graceful stop (SIGTERM: commit the open batch, leave the group), SIGKILL after ``stop_timeout``."""
        process = self._process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(self._stop_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._process = None
        return process.returncode

    def kill(self) -> None:
        """``kill -9`` the child and reap it."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait()
        self._process = None

    def __enter__(self) -> ConsumerProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
