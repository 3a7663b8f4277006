"""What the index files of a segment share: an on-disk file appended to through one descriptor.

The descriptor is opened (and the file created) by the first append through the object, so an index
that is only read never holds one; :meth:`IndexFile.flush` and :meth:`IndexFile.close` act on it only
if it is open.
"""

from __future__ import annotations

import os
from pathlib import Path


class IndexFile:
    """An index file of the segment starting at ``base_offset``, appended to through ``_fd``."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fd: int | None = None

    def _open_for_append(self) -> int:
        """A descriptor that appends to the file, created if missing (appends keep it in ``_fd``)."""
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def flush(self) -> None:
        """fsync the index file if it has been appended to through this object."""
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
