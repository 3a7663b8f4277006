"""A page of the docs, run as written: its ``bash`` blocks, in order, as one script.

The pages' commands use the default configs in ``services/`` and their fixed ports. A test copies
``services/`` next to a fresh working directory and maps each of those ports to a free one (or to a
service the test runs), in the configs and in the commands alike; nothing else is changed. The
script runs under ``set -euo pipefail`` in a session of its own, so it fails on the first command
that fails, and everything it started in the background is killed when it ends.

Used by the tests of ``docs/running-the-services.md`` and ``docs/cluster.md``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from onceflow.core.process import free_ports, kill_session

__all__ = ["bash_blocks", "free_ports", "remap", "run_page", "section"]

#: Suffixes of the files under ``services/`` whose ports are mapped.
CONFIG_SUFFIXES = (".toml", ".properties", ".json")


def bash_blocks(markdown: str) -> list[str]:
    """The contents of the page's fenced ``bash`` blocks, in order."""
    return re.findall(r"^```bash\n(.*?)^```", markdown, flags=re.S | re.M)


def section(markdown: str, heading: str) -> str:
    """The part of ``markdown`` under the ``## heading`` line, up to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", markdown, flags=re.S | re.M)
    if match is None:
        raise LookupError(f"no '## {heading}' section")
    return match.group(1)


def remap(text: str, ports: Mapping[int, int]) -> str:
    """``text`` with every port number of ``ports`` (a whole number, not part of another) replaced."""
    if not ports:
        return text
    return re.sub(r"\b(" + "|".join(map(str, ports)) + r")\b", lambda m: str(ports[int(m.group(1))]), text)


def run_page(
    blocks: Iterable[str],
    work_dir: Path,
    services: Path,
    ports: Mapping[int, int],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
) -> tuple[int, str]:
    """Run ``blocks`` as one script in ``work_dir``; returns its exit code and output (stdout + stderr).

    Steps:
        1. Copy ``services`` to ``work_dir/services`` and map ``ports`` in its config files.
        2. Join the blocks into one ``set -euo pipefail`` script with the same ports mapped, which
           kills its background jobs on exit; this interpreter's ``bin`` (``onceflow``,
           ``python``) comes first on ``PATH``.
        3. Run it in a session of its own; whatever is left of that session afterwards (or after
           ``timeout``) is killed.
    """
    # Step 1
    shutil.copytree(services, work_dir / "services")
    for config in (work_dir / "services").rglob("*"):
        if config.suffix in CONFIG_SUFFIXES:
            config.write_text(remap(config.read_text(), ports))
    # Step 2
    script = "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + remap("\n".join(blocks), ports)
    environment = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    # Step 3
    process = subprocess.Popen(
        ["bash", "-c", script], cwd=work_dir, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_session(process.pid)
        output, _ = process.communicate(timeout=30)
        output += f"\n[runbook: killed after {timeout}s]"
    finally:
        kill_session(process.pid)  # what outlived the script: a daemon in a process group of its own, say
        process.wait(30)
    return process.returncode, output
