"""The ready file: how a service tells its parent process that it serves, and where.

Guarantee: the file appears (atomically, by rename) only once the service serves, holds one JSON
object with at least ``pid`` (of the process that wrote it), ``port`` and ``metrics_port`` (0 when
there is none), and is removed on a clean stop. A parent that deleted a stale file before spawning
can trust a file whose pid is its child's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path


def write_ready_file(path: Path, info: Mapping[str, object]) -> None:
    """Publish ``{"pid": <this process>, **info}`` as ``path`` (atomic replace)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), **info}))
    os.replace(tmp, path)


def remove_ready_file(path: Path) -> None:
    """Remove the ready file if present."""
    path.unlink(missing_ok=True)
