"""Fault injection: named points where a test makes a process crash, as an injected object.

Production code is given a :class:`FaultInjector` and calls ``faults.at("<point>", **ids)`` at the
moments a crash is worth testing (after a decision is logged, after a commit returned). The
default, :data:`NO_FAULTS`, does nothing. A process's composition root (its ``main``) builds a
:class:`CrashAt` instead when the test harness asked for one through the environment
(:func:`faults_from_env`); no module on the production path reads that environment or exits.

:class:`CrashAt` ends the process with ``os._exit(137)`` (what a shell reports after ``kill -9``):
no cleanup, no flushing of clients, exactly like a crash. Only the log handlers are flushed, so the
line naming the point is on disk.
"""

from __future__ import annotations

import abc
import logging
import os
from collections.abc import Callable, Mapping
from typing import Final

from onceflow.core.logging import get_logger

#: The exit code of a crash (128 + SIGKILL).
CRASH_EXIT_CODE: Final = 137

_log = get_logger(__name__)


class FaultInjector(abc.ABC):
    """Where faults may happen; :meth:`at` is called at every named point."""

    @abc.abstractmethod
    def at(self, point: str, **ids: object) -> None:
        """The process reached ``point`` (with the ids of what it was doing)."""


class NoFaults(FaultInjector):
    """The production default: nothing happens at any point."""

    def at(self, point: str, **ids: object) -> None:
        return None


NO_FAULTS: Final[FaultInjector] = NoFaults()


class CrashAt(FaultInjector):
    """Crash the process at ``point``: log it, run ``before_exit`` (say, kill a parent), ``os._exit(137)``."""

    def __init__(self, point: str, *, before_exit: Callable[[], None] | None = None) -> None:
        self.point = point
        self._before_exit = before_exit

    def at(self, point: str, **ids: object) -> None:
        if point != self.point:
            return
        _log.error("fault.crash", point=point, **ids)
        for handler in logging.getLogger().handlers:
            handler.flush()
        if self._before_exit is not None:
            self._before_exit()
        os._exit(CRASH_EXIT_CODE)


def faults_from_env(
    variable: str,
    *,
    point: Callable[[str], str] = str,
    before_exit: Callable[[], None] | None = None,
    env: Mapping[str, str] | None = None,
) -> FaultInjector:
    """:class:`CrashAt` the point named by ``variable`` (mapped through ``point``), else :data:`NO_FAULTS`."""
    value = (os.environ if env is None else env).get(variable, "").strip()
    return CrashAt(point(value), before_exit=before_exit) if value else NO_FAULTS
