"""Durability on a local file system: fsync a file or a directory by path.

A file that a process vouches for (a yes vote, an acknowledged write) must survive a crash of the
machine: its bytes are fsynced, and so is its directory, which holds the name.
"""

from __future__ import annotations

import os


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
