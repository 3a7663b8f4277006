"""Where a local PostgreSQL server's ``initdb`` and ``pg_ctl`` are (for the demo's and the tests' servers)."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path


def find_server_binaries() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl``: PATH first, then the newest ``/usr/lib/postgresql/*/bin``
    (Debian's ``postgresql`` package keeps them off PATH). None when there is no such directory."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(os.path.realpath(on_path)).parent
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").is_file() and (Path(candidate) / "pg_ctl").is_file():
            return Path(candidate)
    return None
