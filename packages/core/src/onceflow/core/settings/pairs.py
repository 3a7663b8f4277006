"""``KEY=VALUE`` arguments of the command line (``-X`` librdkafka properties, ``-c`` connector settings)."""

from __future__ import annotations

from collections.abc import Iterable

from onceflow.core.errors import InvalidConfig


def parse_pairs(items: Iterable[str], option: str) -> dict[str, str]:
    """``["a=1", "b = 2"]`` -> ``{"a": "1", "b": "2"}`` (keys and values stripped; the last one wins).

    Raises InvalidConfig naming ``option`` and the item for an item without ``=`` or without a key.
    """
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidConfig(option, f"expected KEY=VALUE, got {item!r}")
        pairs[key.strip()] = value.strip()
    return pairs
