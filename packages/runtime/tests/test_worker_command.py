"""``python -m onceflow.runtime`` (= ``onceflow connect-worker``) as a real child process: it runs on
the core serve loop, so it publishes a ready file, stops on SIGTERM with exit 0, and a bad config
exits 2 naming the setting."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract.clients import ConnectClient
from onceflow.core.service import read_ready_file
from onceflow.core.toml_writer import to_toml


def _worker(tmp_path: Path, settings: dict[str, Any]) -> tuple[subprocess.Popen[bytes], Path, Path]:
    config = tmp_path / "worker.toml"
    config.write_text(to_toml(settings))
    ready, log = tmp_path / "ready.json", tmp_path / "worker.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "onceflow.runtime", "--config", str(config), "--ready-file", str(ready)],
            stdout=out,
            stderr=out,
        )
    return process, ready, log


def test_the_worker_publishes_its_ready_file_and_stops_on_sigterm(broker: EmbeddedBroker, tmp_path: Path) -> None:
    settings = {"kafka": {"bootstrap_servers": broker.bootstrap_servers}, "server": {"host": "127.0.0.1", "port": 0}}
    process, ready, log = _worker(tmp_path, settings)
    try:
        deadline = time.monotonic() + 60
        while (info := read_ready_file(ready, process.pid)) is None:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        assert info.metrics_port == 0
        with ConnectClient(f"127.0.0.1:{info.port}", timeout_s=10) as client:
            assert client.list_connectors().names == ()
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, log.read_text()
        assert not ready.exists()
        assert "connect_worker.stopped" in log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_a_bad_config_exits_2_naming_the_setting(tmp_path: Path) -> None:
    process, ready, log = _worker(tmp_path, {"mode": "clustered"})
    assert process.wait(60) == 2
    assert "onceflow connect-worker: " in log.read_text() and "mode" in log.read_text()
    assert not ready.exists()
