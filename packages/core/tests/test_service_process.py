"""ServiceProcess with a tiny real child service: a Python script that serves a socket and writes a ready file."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from onceflow.core.process import ServiceProcess, ServiceStartError

# Reads its TOML config, listens on [server].port (0: any), writes {pid, port, metrics_port} atomically,
# answers every connection with "pong", exits 0 on SIGTERM. [server].fail makes it die before ready.
SERVICE = r"""
import json, os, signal, socket, sys, tomllib
config, ready = sys.argv[1], sys.argv[2]
with open(config, "rb") as handle:
    server = tomllib.load(handle)["server"]
print(f"echo starting pid={os.getpid()}", file=sys.stderr, flush=True)
if server.get("fail"):
    print("echo cannot start: told to fail", file=sys.stderr, flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
listener = socket.create_server(("127.0.0.1", server["port"]))
tmp = ready + ".tmp"
with open(tmp, "w") as handle:
    json.dump({"pid": os.getpid(), "port": listener.getsockname()[1], "metrics_port": 0}, handle)
os.replace(tmp, ready)
print(f"echo serving port={listener.getsockname()[1]}", file=sys.stderr, flush=True)
while True:
    connection, _ = listener.accept()
    connection.sendall(b"pong")
    connection.close()
"""


class EchoProcess(ServiceProcess):
    """The tiny service, described the way every onceflow launcher describes its service."""

    NAME = "echo"
    LOG_FILE = "echo.log"
    CONFIG_FILE = "echo.toml"

    def __init__(self, work_dir: Path, *, fail: bool = False, startup_timeout: float = 20.0) -> None:
        super().__init__(work_dir, startup_timeout=startup_timeout, stop_timeout=5.0)
        self.fail = fail

    def command(self) -> list[str]:
        return [sys.executable, "-c", SERVICE, str(self.config_path), str(self.ready_path)]

    def config_settings(self) -> Mapping[str, Any]:
        return {"server": {"port": self._port, "fail": self.fail}}


def ping(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        return connection.recv(4)


@pytest.fixture
def echo(tmp_path: Path) -> Iterator[EchoProcess]:
    process = EchoProcess(tmp_path)
    yield process
    process.kill()


def test_start_returns_once_the_child_serves_on_the_port_of_its_ready_file(echo: EchoProcess) -> None:
    echo.start()
    assert echo.is_running() and echo.is_ready()
    assert echo.port > 0 and echo.metrics_port == 0
    assert ping(echo.port) == b"pong"
    assert "port = 0" in (echo.work_dir / "echo.toml").read_text()


def test_stop_is_a_graceful_sigterm_with_the_exit_code(echo: EchoProcess) -> None:
    echo.start()
    assert echo.stop() == 0
    assert not echo.is_running()
    assert echo.returncode == 0


def test_kill_is_a_real_kill_minus_nine(echo: EchoProcess) -> None:
    echo.start()
    echo.kill()
    assert echo.returncode == -9
    assert not echo.is_running()


def test_restart_after_a_kill_serves_on_the_same_port(echo: EchoProcess) -> None:
    echo.start()
    port, first_pid = echo.port, echo.pid
    echo.kill()
    echo.start()
    assert echo.port == port and echo.pid != first_pid
    assert f"port = {port}" in (echo.work_dir / "echo.toml").read_text()
    assert ping(port) == b"pong"
    assert echo.starts == 2


def test_log_since_start_is_the_current_instance_only(echo: EchoProcess) -> None:
    echo.start()
    first_pid = echo.pid
    echo.stop()
    echo.start()
    _until(lambda: "echo serving" in echo.log_since_start())
    assert f"pid={echo.pid}" in echo.log_since_start()
    assert f"pid={first_pid}" not in echo.log_since_start()
    assert f"pid={first_pid}" in echo.log_tail()
    assert f"pid={first_pid}" not in echo.log_tail(since_start=True)


def test_start_of_a_running_service_is_refused(echo: EchoProcess) -> None:
    echo.start()
    with pytest.raises(RuntimeError, match="already running"):
        echo.start()


def test_a_child_that_dies_before_ready_names_the_command_and_its_log_tail(tmp_path: Path) -> None:
    failing = EchoProcess(tmp_path, fail=True)
    with pytest.raises(ServiceStartError) as failure:
        failing.start()
    message = str(failure.value)
    assert "echo exited with code 3 during startup" in message
    assert sys.executable in message and str(failing.config_path) in message
    assert "echo cannot start: told to fail" in message
    assert not failing.is_running()


def test_a_child_that_is_never_ready_is_killed_after_the_startup_timeout(tmp_path: Path) -> None:
    class Silent(EchoProcess):
        def command(self) -> list[str]:
            return [
                sys.executable,
                "-c",
                "import sys, time; print('silent', file=sys.stderr, flush=True); time.sleep(60)",
            ]

    silent = Silent(tmp_path, startup_timeout=1.0)
    with pytest.raises(ServiceStartError, match=r"did not become ready in 1\.0s"):
        silent.start()
    assert silent.returncode == -9


def test_wait_ready_without_start_raises(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="not running"):
        EchoProcess(tmp_path).wait_ready()
    with pytest.raises(RuntimeError, match="not been started"):
        _ = EchoProcess(tmp_path).port


class Tree(ServiceProcess):
    """A child in a session of its own that spawns a grandchild: kill takes both."""

    NAME = "tree"
    READY_FILE = None
    NEW_SESSION = True

    def command(self) -> list[str]:
        grandchild = "import time; time.sleep(120)"
        code = (
            f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {grandchild!r}]); time.sleep(120)"
        )
        return [sys.executable, "-c", code]


def test_kill_of_a_new_session_child_takes_its_whole_process_tree(tmp_path: Path) -> None:
    from onceflow.core.process import session_members

    tree = Tree(tmp_path)
    tree.start()
    assert tree.pid is not None
    sid = tree.pid
    _until(lambda: len(session_members(sid)) == 2)
    tree.kill()
    assert session_members(sid) == []


class Burner(ServiceProcess):
    """A child in a session of its own whose own child burns 0.3 s of CPU and exits (reaped), and
    which then burns 0.2 s itself and waits: 0.5 s of CPU in the session, whatever the machine's load."""

    NAME = "burner"
    READY_FILE = None
    NEW_SESSION = True

    def command(self) -> list[str]:
        burn = "import time\nwhile time.process_time() < {}: pass"
        code = (
            f"import subprocess, sys, time; subprocess.run([sys.executable, '-c', {burn.format(0.3)!r}]); "
            f"exec({burn.format(0.2)!r}); open({str(self.work_dir / 'burnt')!r}, 'w').close(); time.sleep(120)"
        )
        return [sys.executable, "-c", code]


def test_the_cpu_of_a_session_counts_its_live_members_and_the_children_they_reaped(tmp_path: Path) -> None:
    from onceflow.core.process import session_cpu_seconds

    burner = Burner(tmp_path)
    burner.start()
    assert burner.pid is not None
    _until((tmp_path / "burnt").exists, timeout=120)
    assert session_cpu_seconds(burner.pid) >= 0.5 - 0.04  # /proc counts whole clock ticks per field
    burner.kill()
    assert session_cpu_seconds(burner.pid) == 0.0


def _until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)
