"""Render service settings as TOML config files: the one writer every service launcher and test uses.

Nested dicts become tables, lists of dicts arrays of tables (``[[sinks]]``), ``None`` values are
left out, and keys that are not bare TOML keys (``"linger.ms"``) are quoted, so librdkafka
property tables keep their dotted names. ``tomllib.loads(to_toml(x)) == x`` for such settings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def toml_value(value: Any) -> str:
    """One TOML value: bool, int, float, a list of values, or anything else as a string (paths too)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    # A JSON string is a valid TOML basic string (same escapes).
    return json.dumps(str(value))


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list | tuple) and bool(value) and all(isinstance(v, Mapping) for v in value)


def to_toml(settings: Mapping[str, Any]) -> str:
    """TOML for ``settings``: scalars and lists first, then tables, then arrays of tables, recursively."""
    lines: list[str] = []
    _emit(lines, "", settings)
    return "\n".join(lines).lstrip("\n") + "\n"


def _emit(lines: list[str], prefix: str, values: Mapping[str, Any]) -> None:
    tables = []
    arrays = []
    for key, value in values.items():
        if isinstance(value, Mapping):
            tables.append((key, value))
        elif _is_table_array(value):
            arrays.append((key, value))
        elif value is not None:
            lines.append(f"{_key(key)} = {toml_value(value)}")
    for key, table in tables:
        name = f"{prefix}{_key(key)}"
        lines.append(f"\n[{name}]")
        _emit(lines, f"{name}.", table)
    for key, items in arrays:
        name = f"{prefix}{_key(key)}"
        for item in items:
            lines.append(f"\n[[{name}]]")
            _emit(lines, f"{name}.", item)


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)
