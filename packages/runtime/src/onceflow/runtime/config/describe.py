"""Every setting of a connector plugin as text: name, type, default, allowed values and what it does.

What ``onceflow connect describe`` prints, read from the plugin's own ``ConfigDef`` merged with the
runtime's settings of every connector of its kind (``connector.class``, ``tasks.max``, ...), so it
can never disagree with what the worker accepts.
"""

from __future__ import annotations

from onceflow.core.config_def import REQUIRED, ConfigDef, ConfigKey
from onceflow.runtime.plugins import PluginInfo


def _default(key: ConfigKey) -> str:
    if key.default is REQUIRED:
        return "(required)"
    if isinstance(key.default, list):
        return ",".join(str(item) for item in key.default) or '""'
    if isinstance(key.default, bool):
        return str(key.default).lower()
    return '""' if key.default in ("", None) else str(key.default)


def _allowed(key: ConfigKey) -> str:
    if key.choices:
        return "one of " + ", ".join(key.choices)
    bounds = []
    if key.min is not None:
        bounds.append(f">= {key.min:g}")
    if key.max is not None:
        bounds.append(f"<= {key.max:g}")
    return " and ".join(bounds)


def describe(plugin: PluginInfo, definition: ConfigDef) -> str:
    """The plugin's header line, then one block per setting."""
    lines = [f"{plugin.name} ({plugin.connector_type.value} connector {plugin.version}, {plugin.entry_point})"]
    settings: list[ConfigKey] = definition.keys()
    for key in settings:
        allowed = _allowed(key)
        lines.append(f"  {key.name}  {key.type.value}  default {_default(key)}" + (f"  ({allowed})" if allowed else ""))
        lines.append(f"      {key.doc or '(no description)'}")
    return "\n".join(lines) + "\n"
