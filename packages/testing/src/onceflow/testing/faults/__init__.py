"""Fault injectors for tests, and the plug-ins that install them in the services' child processes.

The product reaches its fault points through :class:`~onceflow.core.faults.FaultInjector` and does
nothing there by default. This package holds every implementation:

- :class:`CrashAt` (``crash.py``): the process dies at a point like a ``kill -9`` (exit 137);
- :class:`HoldAt` (``hold.py``): every process reaching a point waits until the test releases it.

A test arms a fault in a child process through the child's environment. Each service's composition
root calls :func:`~onceflow.core.faults.installed_faults` once at start, which runs this package's
plug-in for that kind of process (entry points of group ``onceflow.faults``): ``coordinator.py``,
``participant.py``, ``consumer.py`` and ``spark.py`` read their test variable and build the injector.
"""

from onceflow.testing.faults.crash import CRASH_EXIT_CODE, CrashAt
from onceflow.testing.faults.hold import HoldAt

__all__ = ["CRASH_EXIT_CODE", "CrashAt", "HoldAt"]
