"""Connector plugins, discovered through the ``onceflow.connectors`` entry-point group.

A plugin is found by its entry-point name (``access-log-generator``) or by its class, given as
``module:Class`` or the class's qualified name, the way Kafka Connect accepts both aliases and
class names in ``connector.class``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points

from onceflow.core.logging import get_logger
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
        plugins = []
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            try:
                loaded = ep.load()
            except Exception as exc:  # a broken plugin must not take the worker down
                _log.warning("plugin.unavailable", plugin=ep.name, entry_point=ep.value, error=repr(exc))
                continue
            if isinstance(loaded, type) and issubclass(loaded, Connector):
                plugins.append(_info(ep.name, ep.value, loaded))
            else:
                _log.warning("plugin.not_a_connector", plugin=ep.name, entry_point=ep.value)
        return cls(plugins)

    def register(self, name: str, cls: type[Connector]) -> None:
        """Add a connector class by hand (tests, embedding)."""
        self._plugins[name] = _info(name, f"{cls.__module__}:{cls.__qualname__}", cls)

    def plugins(self) -> list[PluginInfo]:
        return sorted(self._plugins.values(), key=lambda p: p.name)

    def lookup(self, name: str) -> PluginInfo:
        """The plugin named ``name`` (alias, ``module:Class`` or qualified class name)."""
        found = self._plugins.get(name)
        if found is not None:
            return found
        for plugin in self._plugins.values():
            cls = plugin.connector_class
            if name in (plugin.entry_point, f"{cls.__module__}.{cls.__qualname__}", cls.__qualname__):
                return plugin
        if ":" in name:
            module, _, attr = name.partition(":")
            try:
                loaded: object = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError):
                loaded = None
            if isinstance(loaded, type) and issubclass(loaded, Connector):
                return _info(name, name, loaded)
        raise PluginNotFound(name, list(self._plugins))
