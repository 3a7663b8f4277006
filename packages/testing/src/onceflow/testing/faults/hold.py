"""A fault injector for tests that must not depend on the machine's speed.

:class:`HoldAt` is a :class:`~onceflow.core.faults.FaultInjector` that holds every process reaching
its point until the test releases it: a test sees an operation "still running" for as long as it
needs, whatever the machine's speed. It crosses process boundaries (it pickles to a directory
path), so it also holds work a service runs in a spawned child, such as the consumer's audits.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from onceflow.core.faults import FaultInjector

#: How often a held process looks for the release.
POLL_S = 0.05


class HoldAt(FaultInjector):
    """Hold at ``point`` until :meth:`release` (or ``max_hold_s``, so that nothing is held forever).

    Each held process leaves a marker file, so :meth:`wait_held` can count them.
    """

    def __init__(self, point: str, *, max_hold_s: float = 300.0, directory: str | None = None) -> None:
        self.point = point
        self.max_hold_s = max_hold_s
        self.directory = directory or tempfile.mkdtemp(prefix="onceflow-hold-")

    def __repr__(self) -> str:
        return f"HoldAt({self.point!r}, directory={self.directory!r})"

    @property
    def _released(self) -> Path:
        return Path(self.directory) / "released"

    def at(self, point: str, **ids: object) -> None:
        if point != self.point:
            return
        marker = Path(self.directory) / f"held-{os.getpid()}-{time.monotonic_ns()}"
        marker.touch()
        deadline = time.monotonic() + self.max_hold_s
        while not self._released.exists() and time.monotonic() < deadline:
            time.sleep(POLL_S)

    def held(self) -> int:
        """How many times a process reached the point (held now, or before its release)."""
        return sum(1 for path in Path(self.directory).iterdir() if path.name.startswith("held-"))

    def pids(self) -> list[int]:
        """The processes that reached the point."""
        return [
            int(path.name.split("-")[1]) for path in Path(self.directory).iterdir() if path.name.startswith("held-")
        ]

    def wait_held(self, count: int, timeout: float) -> None:
        """Wait until ``count`` processes reached the point; AssertionError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self.held() < count:
            assert time.monotonic() < deadline, f"{self.held()} of {count} reached {self.point!r} in {timeout}s"
            time.sleep(POLL_S)

    def release(self) -> None:
        """Let every held process go on, and every later one pass."""
        self._released.touch()
