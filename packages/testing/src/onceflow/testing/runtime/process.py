"""WorkerProcess: ``python -m onceflow.runtime`` as a child process, so tests can ``kill -9`` it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc

from onceflow.core.toml_writer import to_toml
from onceflow.proto.v1 import connect_pb2 as pb
from onceflow.runtime.admin.client import ConnectClient


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class WorkerProcess:
    """A worker child process with its settings file, log file and admin port under ``directory``.

    ``settings`` are :class:`WorkerSettings` fields (nested tables as dicts, one level deep).
    ``allowed_paths`` defaults to ``directory``'s parent (a test's ``tmp_path``, where tests keep the
    files a file connector reads); pass ``allowed_paths`` to test the confinement itself.
    """

    def __init__(self, directory: Path, settings: dict[str, Any], connector_files: list[Path] | None = None) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        settings = {
            "allowed_paths": [str(directory.parent)],
            **settings,
            "server": {"host": "127.0.0.1", "port": self.port, **settings.get("server", {})},
        }
        self.config_path = directory / "worker.toml"
        self.config_path.write_text(to_toml(settings))
        self.log_path = directory / "worker.log"
        self.connector_files = [str(p) for p in connector_files or []]
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> WorkerProcess:
        """Start the child and wait until its admin API answers."""
        self.starts += 1
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "onceflow.runtime", "--config", str(self.config_path), *self.connector_files],
                stdout=log,
                stderr=log,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + timeout
        with ConnectClient(self.target, timeout=2) as client:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"worker exited with {self.process.returncode}:\n{self.log_tail()}")
                try:
                    client.call("ListConnectors", pb.ListConnectorsRequest())
                    return self
                except grpc.RpcError:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"worker did not answer within {timeout}s:\n{self.log_tail()}") from None
                    time.sleep(0.1)

    def kill(self) -> None:
        """``kill -9``."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM (graceful shutdown), then SIGKILL after ``timeout``."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def client(self) -> ConnectClient:
        return ConnectClient(self.target, timeout=30)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""
