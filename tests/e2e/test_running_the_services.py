"""docs/running-the-services.md, run as written: its bash blocks, in order, as one script.

The page's commands use the default configs in ``services/`` and their fixed ports. The test copies
``services/`` next to a fresh working directory and maps each of those ports to a free one, in the
configs and in the commands alike; nothing else is changed. The script fails on the first command
that fails (``set -e``), so the audit's verdict decides.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "running-the-services.md"
#: Every port the services' default configs and the page's commands name.
PORTS = (9092, 7100, 7101, 7200, 8083, 9101, 9461, 9462, 9463, 9466)


def bash_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", markdown, flags=re.S | re.M)


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def remap(text: str, ports: dict[int, int]) -> str:
    return re.sub(r"\b(" + "|".join(map(str, ports)) + r")\b", lambda m: str(ports[int(m.group(1))]), text)


def test_the_page_has_the_steps() -> None:
    blocks = bash_blocks(DOC.read_text())
    assert len(blocks) == 7
    script = "\n".join(blocks)
    commands = ("onceflow broker", "onceflow topics create", "onceflow txn init-log", "onceflow coordinator",
                "onceflow participant", "onceflow consumer", "onceflow spark run", "onceflow connect-worker",
                "onceflow audit")  # fmt: skip
    for command in commands:
        assert command in script


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_services_run_one_by_one_as_the_page_says(tmp_path: Path) -> None:
    ports = dict(zip(PORTS, free_ports(len(PORTS)), strict=True))
    shutil.copytree(ROOT / "services", tmp_path / "services")
    for config in (tmp_path / "services").rglob("*"):
        if config.suffix in (".toml", ".properties", ".json"):
            config.write_text(remap(config.read_text(), ports))
    script = "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + remap(
        "\n".join(bash_blocks(DOC.read_text())), ports
    )
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        ["bash", "-c", script], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        output, _ = process.communicate(timeout=840)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)
    audit = output[output.find("truth: file") :]
    assert process.returncode == 0, output[-6000:]
    assert "accounting: EXACT" in audit, audit[-4000:]
    assert re.search(r"overall: EXACT \(3 sinks\)", audit), audit[-4000:]
    assert '"schema": "io.onceflow.v1.IpCount"' in output
