"""A data directory the broker cannot write is refused with one line naming it and exit code 2 (issue 14).

Root ignores permission bits, so the directories are made unwritable for real: a read-only tmpfs,
and a path whose parent is a regular file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .mounts import tmpfs


def _run_broker(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "onceflow.broker", "--data-dir", str(data_dir), "--listen", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _assert_refused(result: subprocess.CompletedProcess[str], data_dir: Path) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(data_dir) in lines[0]


@pytest.mark.parametrize("existing", [False, True], ids=["to-create", "existing"])
def test_data_dir_on_a_read_only_filesystem(tmp_path: Path, existing: bool) -> None:
    with tmpfs(tmp_path / "ro", size="1m") as mount:
        if existing:
            (mount / "broker").mkdir()
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        data_dir = mount / "broker"
        _assert_refused(_run_broker(data_dir), data_dir)


def test_data_dir_under_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    data_dir = tmp_path / "file" / "broker"
    _assert_refused(_run_broker(data_dir), data_dir)
