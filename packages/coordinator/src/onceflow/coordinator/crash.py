"""The coordinator's crash points, for tests: ``ONCEFLOW_COORDINATOR_TEST_CRASH_AFTER=<point>``.

The engine reaches these points through the :class:`~onceflow.core.faults.FaultInjector` it is
given (none by default); ``onceflow coordinator`` builds one from the environment
(:func:`coordinator_faults`). Points:

- ``prepare-logged``: after PREPARING is logged, before any Prepare is sent;
- ``votes-collected``: after every vote is in, before the decision is logged;
- ``commit-logged``: after COMMITTING (the commit point) is logged, before any Commit is sent;
- ``commit-delivered``: after every participant acked, before COMMITTED is logged.
"""

from __future__ import annotations

from typing import Final

from onceflow.core.faults import CRASH_EXIT_CODE, FaultInjector, faults_from_env

CRASH_ENV: Final = "ONCEFLOW_COORDINATOR_TEST_CRASH_AFTER"
CRASH_POINTS: Final = frozenset({"prepare-logged", "votes-collected", "commit-logged", "commit-delivered"})

__all__ = ["CRASH_ENV", "CRASH_EXIT_CODE", "CRASH_POINTS", "coordinator_faults"]


def coordinator_faults() -> FaultInjector:
    """The faults this process's environment asks for (none in production)."""
    return faults_from_env(CRASH_ENV)
