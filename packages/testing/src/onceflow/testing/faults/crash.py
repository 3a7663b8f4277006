"""A crash at a named point, like ``kill -9``, and the test variable that arms one in a child process.

:class:`CrashAt` ends the process with ``os._exit(137)`` (what a shell reports after ``kill -9``):
no cleanup, no flushing of clients, exactly like a crash. Only the log handlers are flushed, so the
line naming the point is on disk.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Collection, Mapping
from typing import Final

from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.core.logging import get_logger

#: The exit code of a crash (128 + SIGKILL).
CRASH_EXIT_CODE: Final = 137

_log = get_logger(__name__)


class CrashAt(FaultInjector):
    """Crash the process at ``point``: log it, run ``before_exit`` (say, kill a parent), ``os._exit(137)``.

    With ``ids``, only where the point's ids include them (compared as text): ``CrashAt("commit-returned",
    ids={"batch": 4})`` crashes after batch 4's commit, and lets batch 3's pass. With ``from_ids``, only
    where the point's ids are at least those numbers: ``from_ids={"batch": 4}`` crashes after the first
    commit of batch 4 or later (a batch that commits nothing does not reach the point).
    """

    def __init__(
        self,
        point: str,
        *,
        ids: Mapping[str, object] | None = None,
        from_ids: Mapping[str, int] | None = None,
        before_exit: Callable[[], None] | None = None,
    ) -> None:
        self.point = point
        self.ids = {key: str(value) for key, value in (ids or {}).items()}
        self.from_ids = dict(from_ids or {})
        self._before_exit = before_exit

    def __repr__(self) -> str:
        at_least = f", from_ids={self.from_ids!r}" if self.from_ids else ""
        return f"CrashAt({self.point!r}, ids={self.ids!r}{at_least})"

    def at(self, point: str, **ids: object) -> None:
        if point != self.point or any(str(ids.get(key)) != value for key, value in self.ids.items()):
            return
        if any(not _at_least(ids.get(key), least) for key, least in self.from_ids.items()):
            return
        _log.error("fault.crash", point=point, **ids)
        for handler in logging.getLogger().handlers:
            handler.flush()
        if self._before_exit is not None:
            self._before_exit()
        os._exit(CRASH_EXIT_CODE)


def _at_least(value: object, least: int) -> bool:
    try:
        return int(str(value)) >= least
    except ValueError:
        return False


def armed_point(variable: str, points: Collection[str], env: Mapping[str, str] | None = None) -> str | None:
    """The crash point the test variable ``variable`` names (None: unset or blank).

    A name that is not one of ``points`` raises ``ValueError`` naming the variable and the points:
    a test that asked for a crash must not run without one.
    """
    value = (os.environ if env is None else env).get(variable, "").strip()
    if not value:
        return None
    if value not in points:
        raise ValueError(f"{variable}={value!r} is not a crash point; the points are: {', '.join(points)}")
    return value


def crash_from_env(variable: str, points: Collection[str], env: Mapping[str, str] | None = None) -> FaultInjector:
    """:class:`CrashAt` the point ``variable`` names, else :data:`~onceflow.core.faults.NO_FAULTS`."""
    point = armed_point(variable, points, env)
    return NO_FAULTS if point is None else CrashAt(point)
