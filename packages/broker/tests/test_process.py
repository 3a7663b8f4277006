"""``python -m onceflow.broker`` as a real child process on the core serve loop: the ready file in the
data dir, SIGTERM, the data dir's lock and a bad flag value."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from onceflow.broker.config import READY_FILE
from onceflow.core.service import Readiness, read_ready_file


def _broker(data_dir: Path, *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "onceflow.broker", "--data-dir", str(data_dir), "--listen", "127.0.0.1:0", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_ready(process: subprocess.Popen[str], data_dir: Path) -> Readiness:
    deadline = time.monotonic() + 60
    while (info := read_ready_file(data_dir / READY_FILE, process.pid)) is None:
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return info


def test_ready_file_then_a_second_broker_is_refused_and_sigterm_stops_cleanly(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = _broker(data_dir)
    try:
        info = _wait_ready(first, data_dir)
        assert info.port > 0 and info.advertised.endswith(f":{info.port}")

        second = _broker(data_dir)
        _, stderr = second.communicate(timeout=60)
        assert second.returncode == 1, stderr
        assert f"onceflow broker: data dir {data_dir} is locked" in stderr
        assert read_ready_file(data_dir / READY_FILE) == info, (
            "the refused broker leaves the running one's ready file alone"
        )

        first.send_signal(signal.SIGTERM)
        _, stderr = first.communicate(timeout=60)
        assert first.returncode == 0, stderr
        assert "broker.signal" in stderr and "broker.stopped" in stderr
        assert read_ready_file(data_dir / READY_FILE) is None
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate(timeout=10)


def test_a_bad_flag_value_exits_2_naming_it(tmp_path: Path) -> None:
    process = _broker(tmp_path / "data", "--default-partitions", "0")
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2, stderr
    assert stderr.startswith("onceflow broker: ") and "default_partitions" in stderr
