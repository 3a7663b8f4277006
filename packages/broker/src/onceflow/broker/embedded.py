"""Run a broker as a child process, for tests and single-machine runs.

``BrokerProcess`` is the process machinery (spawn, readiness wait, stop, ``kill -9``, restart on the
same data dir and port); ``EmbeddedBroker`` fills it in for onceflow's own broker and
``onceflow.testing.broker.apache_kafka.ApacheKafka`` for a real Apache Kafka.

``EmbeddedBroker`` guarantees:
- ``start()`` returns only once the child accepts connections (or raises with the tail of its log);
- the child is a real process (``python -m onceflow.broker``), so ``kill()`` is a real ``kill -9``;
- ``start()`` after ``stop()``/``kill()`` reuses the same data dir and the same port;
- child stderr is appended to ``data_dir/broker.log``;
- importing this module is cheap (stdlib only).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from onceflow.broker.readiness import clear_ready, read_ready
from onceflow.core.toml_writer import to_toml

LOG_FILE = "broker.log"
CONFIG_FILE = "embedded-broker.toml"


class BrokerProcess(ABC):
    """A Kafka-protocol broker as a child process on ``data_dir``, listening on ``host``.

    Subclasses name the command (:meth:`_command`) and say when it serves (:meth:`_serving_port`).
    Guarantees: ``start()`` returns only once the child serves (or raises with the tail of its log and
    leaves no child behind); ``kill()`` is a real ``kill -9``; ``start()`` after ``stop()``/``kill()``
    reuses the same data dir and the same port; the child's stdout and stderr are appended to
    :attr:`log_path`.
    """

    LOG_FILE = LOG_FILE
    NAME = "broker"
    STDOUT_TO_LOG = True
    """False: the child's stdout is discarded (it only repeats what its log says)."""

    def __init__(
        self,
        data_dir: Path,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        startup_timeout: float = 30.0,
        stop_timeout: float = 10.0,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.host = host
        self._port = port
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def port(self) -> int:
        """The listening port (known after the first ``start()`` when created with port 0)."""
        if self._port == 0:
            raise RuntimeError(f"{self.NAME} has not been started yet")
        return self._port

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for client configs."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """Process id of the running child, or None."""
        return self._process.pid if self._process is not None else None

    @property
    def log_path(self) -> Path:
        """File that receives the child's output."""
        return self.data_dir / self.LOG_FILE

    def is_running(self) -> bool:
        """True while the child process is alive."""
        return self._process is not None and self._process.poll() is None

    def log_tail(self, lines: int = 60) -> str:
        """The last lines of the child's log, for failure messages."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return f"<no {self.NAME} log>"

    @abstractmethod
    def _command(self) -> Sequence[str]:
        """Prepare the data dir (config files, formatting) and return the command line to spawn."""

    @abstractmethod
    def _serving_port(self, pid: int) -> int | None:
        """The port the child ``pid`` serves on once it is ready, None while it is not yet."""

    def start(self) -> Self:
        """Spawn the child and wait until it serves; raises RuntimeError if it does not."""
        if self.is_running():
            raise RuntimeError(f"{self.NAME} already running with pid {self.pid}")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = list(self._command())
        with self.log_path.open("ab") as log_file:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log_file if self.STDOUT_TO_LOG else subprocess.DEVNULL,
                stderr=log_file,
            )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self._startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                code = self._process.returncode
                self._process = None
                raise RuntimeError(
                    f"{self.NAME} exited with code {code} during startup; log {self.log_path}:\n{self.log_tail()}"
                )
            port = self._serving_port(self._process.pid)
            if port is not None:
                self._port = port
                return
            time.sleep(0.02)
        self.kill()
        raise RuntimeError(f"{self.NAME} did not become ready in {self._startup_timeout}s:\n{self.log_tail()}")

    def _accepts(self, port: int) -> bool:
        try:
            with socket.create_connection((self.host, port), timeout=1.0):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        """Graceful stop: SIGTERM, then SIGKILL if the child outlives ``stop_timeout``."""
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
        self._process = None

    def kill(self) -> None:
        """``kill -9`` the child and reap it."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait()
        self._process = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class EmbeddedBroker(BrokerProcess):
    """A broker child process on ``data_dir``; ``options`` are :class:`BrokerConfig` field names.

    Example: ``EmbeddedBroker(tmp_path, auto_create_topics=False, default_partitions=3)``.
    """

    STDOUT_TO_LOG = False

    def __init__(
        self,
        data_dir: Path,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        startup_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        **options: object,
    ) -> None:
        super().__init__(data_dir, port, host=host, startup_timeout=startup_timeout, stop_timeout=stop_timeout)
        self._options = options

    def _write_config(self) -> Path:
        path = self.data_dir / CONFIG_FILE
        path.write_text(to_toml(self._options))
        return path

    def _command(self) -> list[str]:
        clear_ready(self.data_dir)
        return [
            sys.executable,
            "-m",
            "onceflow.broker",
            "--config",
            str(self._write_config()),
            "--data-dir",
            str(self.data_dir),
            "--listen",
            f"{self.host}:{self._port}",
        ]

    def _serving_port(self, pid: int) -> int | None:
        info = read_ready(self.data_dir)
        if info is not None and info.pid == pid and self._accepts(info.port):
            return info.port
        return None
