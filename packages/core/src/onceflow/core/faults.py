"""Fault injection points: where a test may make a process crash or wait. Nothing happens in production.

Production code is given a :class:`FaultInjector` and calls ``faults.at("<point>", **ids)`` at the
moments a crash is worth testing (after a decision is logged, after a commit returned). The
default, :data:`NO_FAULTS`, does nothing.

A process's composition root (its ``main``) asks :func:`installed_faults` once for the injector of
its kind of process. That is :data:`NO_FAULTS` unless a test harness installed a plug-in: an entry
point of group :data:`PLUGIN_GROUP` named after the process. The implementations (crashes that end
the process like ``kill -9``, holds) and the test environment they read live in the
``onceflow-testing`` distribution, which no product package depends on and no image installs. No
product module crashes or reads a test's environment.
"""

from __future__ import annotations

import abc
import functools
from typing import Final

from onceflow.core.logging import get_logger
from onceflow.core.plugins import CALLABLE, PluginError, load_group

#: The entry-point group of fault plug-ins: ``<process> = "module:factory"``, a factory taking no
#: arguments and returning the process's :class:`FaultInjector`.
PLUGIN_GROUP: Final = "onceflow.faults"

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

    def __repr__(self) -> str:
        return "NO_FAULTS"


NO_FAULTS: Final[FaultInjector] = NoFaults()


@functools.cache
def installed_faults(process: str) -> FaultInjector:
    """The injector a test harness installed for ``process`` (``coordinator``, ``participant``, ...),
    else :data:`NO_FAULTS`. Looked up once per process: later calls return the same injector.

    A plug-in that fails to load, or does not build a :class:`FaultInjector`, raises
    :class:`~onceflow.core.plugins.PluginError`: a test that asked for a fault must not run without it.
    """
    plugins = load_group(PLUGIN_GROUP, kind=CALLABLE, name=process)
    if not plugins:
        return NO_FAULTS
    if len(plugins) > 1:
        raise RuntimeError(f"{len(plugins)} {PLUGIN_GROUP} plug-ins for {process!r}: {[p.value for p in plugins]}")
    (plugin,) = plugins
    injector = plugin.target()
    if not isinstance(injector, FaultInjector):
        raise PluginError(plugin.entry, f"built {injector!r}, not a FaultInjector")
    if injector is not NO_FAULTS:
        _log.warning("faults.installed", process=process, plugin=plugin.value, injector=repr(injector))
    return injector
