"""Test-only crash points: ``ONCEFLOW_COORDINATOR_TEST_CRASH_AFTER=<point>`` makes the process die there.

The process exits with :data:`CRASH_EXIT_CODE` (137, what a shell reports after ``kill -9``) through
``os._exit``: no cleanup, no flushing of clients, exactly like a crash. Points:

- ``prepare-logged``: after PREPARING is logged, before any Prepare is sent;
- ``votes-collected``: after every vote is in, before the decision is logged;
- ``commit-logged``: after COMMITTING (the commit point) is logged, before any Commit is sent;
- ``commit-delivered``: after every participant acked, before COMMITTED is logged.
"""

from __future__ import annotations

import logging
import os
from typing import Final

from onceflow.core.logging import get_logger

CRASH_ENV: Final = "ONCEFLOW_COORDINATOR_TEST_CRASH_AFTER"
CRASH_EXIT_CODE: Final = 137
CRASH_POINTS: Final = frozenset({"prepare-logged", "votes-collected", "commit-logged", "commit-delivered"})

_log = get_logger(__name__)


def crash_point(name: str, **ids: object) -> None:
    """Die here if the crash hook names this point (a no-op otherwise)."""
    if os.environ.get(CRASH_ENV) != name:
        return
    _log.error("coordinator.test_crash", point=name, **ids)
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(CRASH_EXIT_CODE)
