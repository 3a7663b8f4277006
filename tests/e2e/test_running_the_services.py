"""docs/running-the-services.md, run as written: its bash blocks, in order, as one script.

The page's commands use the default configs in ``services/`` and their fixed ports. The test copies
``services/`` next to a fresh working directory and maps each of those ports to a free one, in the
configs and in the commands alike; nothing else is changed. The script fails on the first command
that fails (``set -e``), so the audit's verdict decides.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onceflow.testing.runbook import bash_blocks, free_ports, run_page

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "running-the-services.md"
#: Every port the services' default configs and the page's commands name.
PORTS = (9092, 7100, 7101, 7200, 8083, 9101, 9461, 9462, 9463, 9466)


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
    code, output = run_page(bash_blocks(DOC.read_text()), tmp_path, ROOT / "services", ports, timeout=840)
    audit = output[output.find("truth: file") :]
    assert code == 0, output[-6000:]
    assert "accounting: EXACT" in audit, audit[-4000:]
    assert re.search(r"overall: EXACT \(3 sinks\)", audit), audit[-4000:]
    assert '"schema": "io.onceflow.v1.IpCount"' in output
