"""The coordinator's crash points: ``ONCEFLOW_COORDINATOR_TEST_CRASH_AFTER=<point>`` in its environment.

The engine reaches these points through the :class:`~onceflow.core.faults.FaultInjector` it is
given; ``onceflow coordinator`` asks :func:`~onceflow.core.faults.installed_faults` for it once at
start, which calls :func:`from_env` (the ``coordinator`` plug-in of this package). Points:

- ``prepare-logged``: after PREPARING is logged, before any Prepare is sent;
- ``votes-collected``: after every vote is in, before the decision is logged;
- ``commit-logged``: after COMMITTING (the commit point) is logged, before any Commit is sent;
- ``commit-delivered``: after every participant acked, before COMMITTED is logged.
"""

from __future__ import annotations

from typing import Final

from onceflow.core.faults import FaultInjector
from onceflow.testing.faults.crash import crash_from_env

CRASH_ENV: Final = "ONCEFLOW_COORDINATOR_TEST_CRASH_AFTER"
CRASH_POINTS: Final = ("prepare-logged", "votes-collected", "commit-logged", "commit-delivered")


def from_env() -> FaultInjector:
    """The crash :data:`CRASH_ENV` asks for, else none."""
    return crash_from_env(CRASH_ENV, CRASH_POINTS)
