"""Real filesystems for adversarial tests: a small tmpfs that really fills up, a read-only one.

Mounting needs root (CI runs as root); without it the tests that need a mount are skipped with
the reason. Every mount is lazily unmounted on exit, even if a broker still holds files open.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def require_root() -> None:
    """Skip the calling test unless it runs as root (mounting a tmpfs needs it)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs (CI runs the tests as root)")


@contextlib.contextmanager
def tmpfs(mount_point: Path, *, size: str, read_only: bool = False) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (``mount -t tmpfs -o size=...``) on ``mount_point``; unmount on exit."""
    require_root()
    mount_point.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount_point)], check=True)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(path: Path, size: int) -> None:
    """Write ``size`` bytes of zeros to ``path`` (a filler whose deletion frees space later)."""
    with path.open("wb") as fh:
        fh.write(b"\0" * size)
        fh.flush()
        os.fsync(fh.fileno())


def fill_up(path: Path) -> None:
    """Write zeros to ``path`` until the filesystem is full (ENOSPC)."""
    chunk = b"\0" * 65536
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while True:
            try:
                if os.write(fd, chunk) < len(chunk):
                    chunk = chunk[:1]
            except OSError:
                if len(chunk) == 1:
                    return
                chunk = chunk[:1]
    finally:
        os.close(fd)
