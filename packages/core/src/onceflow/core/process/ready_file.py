"""The ready file a service writes once it serves: JSON ``{"pid": N, "port": N, "metrics_port": N}``.

The service replaces the file atomically once its listener accepts connections, so a parent that
deleted a stale file before spawning can trust a file that names its child's pid.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Readiness:
    """Where a ready service serves: its port and its metrics port (0 when it exports none)."""

    port: int
    metrics_port: int = 0


def read_ready_file(path: Path, pid: int | None) -> Readiness | None:
    """The readiness ``path`` reports if process ``pid`` wrote it; None if absent, stale or half-written."""
    try:
        info = json.loads(path.read_text())
        if pid is None or info.get("pid") != pid:
            return None
        return Readiness(port=int(info["port"]), metrics_port=int(info.get("metrics_port", 0)))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
