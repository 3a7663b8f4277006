"""The ready file: how a service tells its parent process that it serves, and where.

Written by the serve loop (:func:`~onceflow.core.service.serve_until_signalled`) and read by every
parent (:class:`~onceflow.core.process.ServiceProcess`, the demo's supervisor, tests), with the
functions of this module only.

Guarantee: the file appears (atomically, by rename) only once the service serves, holds one JSON
object with at least ``pid`` (of the process that wrote it), ``port`` and ``metrics_port`` (0 when
there is none), and is removed on a clean stop. A parent that deleted a stale file before spawning
can trust a file whose pid is its child's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Readiness:
    """Where a ready service serves: its port, its metrics port (0 when it exports none), the pid that
    wrote the ready file (None when readiness was learnt otherwise) and the address it gives its
    clients, when it publishes one (the broker's ``advertised``)."""

    port: int
    metrics_port: int = 0
    pid: int | None = None
    advertised: str = ""


def write_ready_file(path: Path, info: Mapping[str, object]) -> None:
    """Publish ``{"pid": <this process>, **info}`` as ``path`` (atomic replace)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), **info}))
    os.replace(tmp, path)


def read_ready_file(path: Path, pid: int | None = None) -> Readiness | None:
    """The readiness ``path`` reports, if process ``pid`` wrote it (any process when ``pid`` is None);
    None if absent, stale or half-written."""
    try:
        info = json.loads(path.read_text())
        if pid is not None and info.get("pid") != pid:
            return None
        return Readiness(
            port=int(info["port"]),
            metrics_port=int(info.get("metrics_port", 0)),
            pid=int(info["pid"]),
            advertised=str(info.get("advertised", "")),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def remove_ready_file(path: Path) -> None:
    """Remove the ready file if present."""
    path.unlink(missing_ok=True)
