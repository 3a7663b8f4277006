"""Render service settings as TOML config files: the one writer every service launcher and test uses.

The writing is ``tomli-w``'s; this module only shapes settings the way launchers build them: ``None``
values are left out, paths and other objects become strings, and tuples become arrays. Keys that
are not bare TOML keys (``"linger.ms"``) are quoted by the writer, so librdkafka property tables
keep their dotted names. ``tomllib.loads(to_toml(x)) == x`` for such settings.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import tomli_w


def to_toml(settings: Mapping[str, Any]) -> str:
    """TOML for ``settings`` (nested mappings become tables, lists of mappings arrays of tables)."""
    return tomli_w.dumps(_plain(settings))


def _plain(values: Mapping[str, Any]) -> dict[str, Any]:
    return {str(key): _value(value) for key, value in values.items() if value is not None}


def _value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _plain(value)
    if isinstance(value, list | tuple):
        return [_value(item) for item in value if item is not None]
    if isinstance(value, bool | int | float | str | dt.date | dt.time):
        return value
    return str(value)
