"""Durability on a local file system: fsync a file or a directory by path, replace a file atomically.

A file that a process vouches for (a yes vote, an acknowledged write) must survive a crash of the
machine: its bytes are fsynced, and so is its directory, which holds the name.
"""

from __future__ import annotations

import os
from pathlib import Path


def fsync_path(path: str | os.PathLike[str]) -> None:
    """fsync the file or directory at ``path`` (opened read-only, closed again)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def fsync_file_and_directory(path: str | os.PathLike[str]) -> None:
    """fsync the file at ``path``, then the directory holding its name."""
    fsync_path(path)
    fsync_path(os.path.dirname(os.path.abspath(path)))


def write_all(descriptor: int, data: bytes | bytearray | memoryview) -> int:
    """Write all of ``data`` to ``descriptor``: a short write (disk full) either finishes or raises.
    Returns the number of bytes written."""
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]
    return len(data)


def replace_durably(path: Path, data: bytes, *, tmp: Path | None = None, mode: int = 0o644) -> None:
    """Make ``data`` the content of ``path`` atomically and durably: a reader, or a restart after a
    crash of the machine, sees the old file or the new one, never a torn one.

    Steps: 1. write ``data`` to ``tmp`` (``.<name>.tmp`` next to ``path`` unless named; created with
    ``mode``) and fsync it, removing it again if that fails; 2. rename it over ``path`` and fsync the
    directory, which holds the name. Raises OSError; ``path`` is then unchanged.
    """
    # Step 1
    staging = tmp if tmp is not None else path.with_name(f".{path.name}.tmp")
    descriptor = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        write_all(descriptor, data)
        os.fsync(descriptor)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    finally:
        os.close(descriptor)
    # Step 2
    os.replace(staging, path)
    fsync_path(path.parent)
