"""Render service settings (nested dicts, lists of dicts for arrays of tables) as TOML config files."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
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
            lines.append(f"{_key(key)} = {_value(value)}")
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
