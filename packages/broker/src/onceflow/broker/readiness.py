"""How a broker process tells its parent that it is serving, and on which port.

Guarantee: the ``ready`` file in the data dir appears (atomically, via rename) only after the
listener accepts connections, names the pid of the process that wrote it, and is removed on clean
shutdown. A parent that deleted a stale file before spawning can trust a file whose pid is its child.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

READY_FILE = "ready"
READY_LINE_PREFIX = "ONCEFLOW_BROKER_READY"


@dataclass(frozen=True, slots=True)
class ReadyInfo:
    """What a serving broker reports: its pid, bound port and advertised address."""

    pid: int
    port: int
    advertised: str


def write_ready(data_dir: Path, info: ReadyInfo) -> None:
    """Publish ``info`` as ``data_dir/ready`` (atomic replace)."""
    tmp = data_dir / f".{READY_FILE}.tmp"
    tmp.write_text(json.dumps({"pid": info.pid, "port": info.port, "advertised": info.advertised}))
    os.replace(tmp, data_dir / READY_FILE)


def read_ready(data_dir: Path) -> ReadyInfo | None:
    """The published info, or None if there is none (or it is half-written garbage)."""
    try:
        raw = json.loads((data_dir / READY_FILE).read_text())
        return ReadyInfo(pid=int(raw["pid"]), port=int(raw["port"]), advertised=str(raw["advertised"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def clear_ready(data_dir: Path) -> None:
    """Remove the ready file if present."""
    (data_dir / READY_FILE).unlink(missing_ok=True)
