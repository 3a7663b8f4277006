"""The one serve loop (``onceflow.core.service``), run in a real child process: ready file, signals,
graceful stop, exit codes and the messages of a bad configuration."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from onceflow.core.grpc import open_channel

SCRIPT = Path(__file__).with_name("health_service.py")
FAILED_EXIT = 4


class Child:
    """``health_service.py`` as a child process, its stderr in a file."""

    def __init__(self, tmp_path: Path, config: str, *, ready: bool = True) -> None:
        self.config = tmp_path / "service.toml"
        self.config.write_text(config)
        self.ready_file = tmp_path / "ready.json"
        self.log = tmp_path / "service.log"
        command = [sys.executable, str(SCRIPT), "--config", str(self.config)]
        if ready:
            command += ["--ready-file", str(self.ready_file)]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=log)

    def ready_info(self, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                info: dict[str, Any] = json.loads(self.ready_file.read_text())
                return info
            except (OSError, ValueError):
                pass
            assert self.process.poll() is None, f"exited with {self.process.returncode}:\n{self.output()}"
            time.sleep(0.02)
        raise AssertionError(f"not ready in {timeout}s:\n{self.output()}")

    def wait_for_log(self, event: str, timeout: float = 30) -> str:
        """The first log line with ``event``, once written."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.output().splitlines():
                if event in line:
                    return line
            assert self.process.poll() is None, f"exited with {self.process.returncode}:\n{self.output()}"
            time.sleep(0.02)
        raise AssertionError(f"no {event} in {timeout}s:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def children() -> Iterator[list[Child]]:
    started: list[Child] = []
    yield started
    for child in started:
        child.kill()


def _serving(port: int) -> int:
    with open_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        response = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        return int(response.status)


def test_the_ready_file_appears_once_serving_and_sigterm_stops_gracefully(
    tmp_path: Path, children: list[Child]
) -> None:
    child = Child(tmp_path, "[server]\nport = 0\n")
    children.append(child)
    info = child.ready_info()
    assert info["pid"] == child.process.pid and info["metrics_port"] == 0
    assert _serving(info["port"]) == health_pb2.HealthCheckResponse.SERVING
    assert not list(tmp_path.glob(".ready.json.tmp")), "written atomically, through a renamed temporary file"

    child.process.send_signal(signal.SIGTERM)
    assert child.process.wait(20) == 0, child.output()
    assert not child.ready_file.exists(), "a clean stop removes the ready file"
    output = child.output()
    assert "health.signal" in output and "signal=SIGTERM" in output and "health.stopped" in output
    with pytest.raises(grpc.RpcError):
        _serving(info["port"])


def test_sigint_is_a_graceful_stop_too(tmp_path: Path, children: list[Child]) -> None:
    child = Child(tmp_path, "[server]\nport = 0\n")
    children.append(child)
    child.ready_info()
    child.process.send_signal(signal.SIGINT)
    assert child.process.wait(20) == 0, child.output()
    assert "signal=SIGINT" in child.output()


def test_a_bad_config_exits_2_naming_the_setting(tmp_path: Path, children: list[Child]) -> None:
    child = Child(tmp_path, '[server]\nport = "not a port"\n')
    children.append(child)
    assert child.process.wait(30) == 2
    output = child.output()
    assert output.startswith("onceflow health: ") and "server.port" in output, output
    assert not child.ready_file.exists()


def test_a_missing_token_file_exits_2_naming_the_setting_before_starting(tmp_path: Path, children: list[Child]) -> None:
    missing = tmp_path / "no_such_token"
    child = Child(tmp_path, f'[server]\nport = 0\n[server.auth]\ntoken_file = "{missing}"\n')
    children.append(child)
    assert child.process.wait(30) == 2
    output = child.output()
    assert output.startswith("onceflow health: ") and "server.auth.token_file" in output, output
    assert "cannot read" in output and str(missing) in output
    assert not child.ready_file.exists()


def test_a_port_in_use_exits_2_naming_the_setting(tmp_path: Path, children: list[Child]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        child = Child(tmp_path, f'[server]\nhost = "127.0.0.1"\nport = {taken.getsockname()[1]}\n')
        children.append(child)
        assert child.process.wait(30) == 2
    output = child.output()
    assert "onceflow health: " in output and "server.port" in output and "cannot listen" in output, output
    assert not child.ready_file.exists()


def test_a_service_that_fails_on_its_own_exits_with_its_code_and_reason(tmp_path: Path, children: list[Child]) -> None:
    child = Child(tmp_path, "fail_after_ms = 300\n[server]\nport = 0\n")
    children.append(child)
    child.ready_info()
    assert child.process.wait(20) == FAILED_EXIT
    output = child.output()
    assert "health.fatal" in output and "onceflow health: the test service failed on purpose" in output, output
    assert not child.ready_file.exists()


def test_sigterm_during_a_waiting_start_is_a_clean_stop_without_a_ready_file(
    tmp_path: Path, children: list[Child]
) -> None:
    child = Child(tmp_path, "start_waits = true\n[server]\nport = 0\n")
    children.append(child)
    child.wait_for_log("health.waiting")  # the handlers are installed before the start
    child.process.send_signal(signal.SIGTERM)
    assert child.process.wait(20) == 0, child.output()
    assert "health.stopped" in child.output() and "during=start" in child.output()
    assert not child.ready_file.exists()


def test_without_ready_file_it_still_serves_and_stops(tmp_path: Path, children: list[Child]) -> None:
    child = Child(tmp_path, "[server]\nport = 0\n", ready=False)
    children.append(child)
    port = int(child.wait_for_log("health.serving").split("port=")[1].split()[0])
    assert _serving(port) == health_pb2.HealthCheckResponse.SERVING
    child.process.send_signal(signal.SIGTERM)
    assert child.process.wait(20) == 0, child.output()
    assert not child.ready_file.exists()
