"""A list setting whose entries are named must not name two the same (``[[sinks]]``, ``[[participants]]``)."""

from __future__ import annotations

from collections.abc import Iterable


def check_unique(names: Iterable[str], rule: str) -> None:
    """Raise ValueError with ``rule`` and every repeated name: ``sink names must be unique; repeated: a, b``."""
    seen: set[str] = set()
    repeated: set[str] = set()
    for name in names:
        (repeated if name in seen else seen).add(name)
    if repeated:
        raise ValueError(f"{rule}; repeated: {', '.join(sorted(repeated))}")
