"""Open a local file only if what is opened lies inside the allowed directories (docs/design.md, "Security").

:func:`~onceflow.core.confinement.confine_path` checks a path; between that check and an ``open`` the
path can change (a symlink swapped in at a log rotation, a directory renamed). :func:`open_confined`
checks the file it opened, so a file read on every re-open (the file tailer's rotations) can never
come from outside the allowed directories, whatever happens to the path in between.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from onceflow.core.confinement import PathNotAllowed, confine_path

#: Where Linux shows the path of an open descriptor.
_FD_PATHS = Path("/proc/self/fd")


def open_confined(path: str | os.PathLike[str], allowed: Iterable[str | os.PathLike[str]]) -> int:
    """A read-only descriptor of the regular file ``path``, which lies inside one of ``allowed``.

    Steps:
        1. Resolve ``path`` (symlinks and ``..``) and check it lies inside an allowed directory
           (:func:`confine_path`); note the identity (device, inode) of the file it names.
        2. Open the resolved path with ``O_NOFOLLOW`` (its last component can no longer be a symlink
           swapped in after step 1) and ``O_NONBLOCK`` (a FIFO cannot hold the caller).
        3. Check what was opened: a regular file; the same identity as in step 1; and, where the
           kernel shows it (``/proc/self/fd``), a path inside the allowed directories (a directory
           of the path replaced by a symlink after step 1).

    A refusal is :class:`PathNotAllowed` naming ``path`` (the descriptor is closed). A file that does
    not exist (or cannot be read) raises the ``OSError`` of ``open``, as a plain open would.
    """
    roots = list(allowed)
    raw = os.fspath(path)
    # Step 1
    real = confine_path(raw, roots)
    checked = os.stat(real)
    # Step 2
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathNotAllowed(raw, "it became a symbolic link while it was opened") from None
        raise
    # Step 3
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise PathNotAllowed(raw, "it is not a regular file")
        if (opened.st_dev, opened.st_ino) != (checked.st_dev, checked.st_ino):
            raise PathNotAllowed(raw, "it was replaced while it was opened")
        shown = _kernel_path(fd)
        if shown is not None:
            confine_path(shown, roots)
    except PathNotAllowed as exc:
        os.close(fd)
        raise PathNotAllowed(raw, exc.reason) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _kernel_path(fd: int) -> str | None:
    """The path the kernel has for ``fd``, or None where it does not say (no /proc, a deleted file)."""
    try:
        shown = os.readlink(_FD_PATHS / str(fd))
    except OSError:
        return None
    return None if shown.endswith(" (deleted)") else shown
