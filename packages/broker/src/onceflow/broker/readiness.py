"""Where a broker process tells its parent that it is serving, and on which port: ``data_dir/ready``.

The serve loop writes it (:mod:`onceflow.core.service.ready_file`: atomically, only once the
listener accepts connections, with the writer's pid, removed on a clean stop) with the broker's
``port`` and ``advertised`` address. A parent that deleted a stale file before spawning can trust a
file whose pid is its child.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

READY_FILE = "ready"


@dataclass(frozen=True, slots=True)
class ReadyInfo:
    """What a serving broker reports: its pid, bound port and advertised address."""

    pid: int
    port: int
    advertised: str


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
