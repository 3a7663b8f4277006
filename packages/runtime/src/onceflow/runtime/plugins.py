"""Connector plugins, discovered through the ``onceflow.connectors`` entry-point group.

A plugin is found by its entry-point name (``access-log-generator``) or by its class, given as
its entry point (``module:Class``), its fully qualified name (``module.Class``) or its class name,
the way Kafka Connect accepts both aliases and class names in ``connector.class``. Only registered
plugins are ever found: a name that is none of these is :class:`PluginNotFound`, and nothing is
imported for it (``connector.class`` comes from the admin API, so it must not import arbitrary
modules).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from onceflow.core.errors import InvalidConfig
from onceflow.core.logging import get_logger
from onceflow.core.plugins import PluginError, load_group
from onceflow.runtime.api.connector import Connector, ConnectorType
from onceflow.runtime.exceptions import PluginNotFound

ENTRY_POINT_GROUP = "onceflow.connectors"
_log = get_logger(__name__)


@dataclass(frozen=True)
class PluginInfo:
    name: str
    connector_type: ConnectorType
    version: str
    entry_point: str
    connector_class: type[Connector]


def _info(name: str, entry_point: str, cls: type[Connector]) -> PluginInfo:
    return PluginInfo(name, cls.connector_type, cls.version, entry_point, cls)


class PluginRegistry:
    """The connector classes a worker can run."""

    def __init__(self, plugins: list[PluginInfo] | None = None) -> None:
        self._plugins: dict[str, PluginInfo] = {p.name: p for p in plugins or []}

    @classmethod
    def discover(cls) -> PluginRegistry:
        """Every installed ``onceflow.connectors`` entry point; broken ones are logged and skipped."""

        def skip(error: PluginError) -> None:  # a broken plugin must not take the worker down
            _log.warning("plugin.unavailable", plugin=error.name, entry_point=error.value, error=error.reason)

        found = load_group(ENTRY_POINT_GROUP, kind=Connector, on_error=skip)
        return cls([_info(plugin.name, plugin.value, plugin.target) for plugin in found])

    def register_class(self, spec: str) -> None:
        """Register the connector class ``module:Class`` under that name (the worker's ``extra_plugins``).

        Raises :class:`InvalidConfig` (``extra_plugins``) when it does not name a :class:`Connector` class.
        """
        module, _, attr = spec.partition(":")
        try:
            loaded: object = getattr(importlib.import_module(module), attr) if module and attr else None
        except (ImportError, AttributeError):
            loaded = None
        if not (isinstance(loaded, type) and issubclass(loaded, Connector)):
            raise InvalidConfig("extra_plugins", f"{spec!r} does not name a connector class (module:Class)")
        self.register(spec, loaded)

    def register(self, name: str, cls: type[Connector]) -> None:
        """Add a connector class by hand (tests, embedding)."""
        self._plugins[name] = _info(name, f"{cls.__module__}:{cls.__qualname__}", cls)

    def plugins(self) -> list[PluginInfo]:
        return sorted(self._plugins.values(), key=lambda p: p.name)

    def lookup(self, name: str) -> PluginInfo:
        """The registered plugin named ``name`` (alias, entry point, qualified or plain class name); never imports."""
        found = self._plugins.get(name)
        if found is not None:
            return found
        for plugin in self._plugins.values():
            cls = plugin.connector_class
            if name in (plugin.entry_point, f"{cls.__module__}.{cls.__qualname__}", cls.__qualname__):
                return plugin
        raise PluginNotFound(name, list(self._plugins))
