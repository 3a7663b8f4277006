"""Entry points installed for a test: a real distribution on ``sys.path``, found by ``importlib.metadata``
like any installed one (no patching of the look-up)."""

from __future__ import annotations

import contextlib
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path


@contextlib.contextmanager
def installed_entry_points(directory: Path, groups: Mapping[str, Mapping[str, str]]) -> Iterator[None]:
    """While in the block, a distribution in ``directory`` registers ``groups``: per group, entry-point
    name -> ``module:attr``. ``directory`` must be new to this process (a test's ``tmp_path``), since
    ``importlib.metadata`` caches what it found in each ``sys.path`` entry."""
    name = f"onceflow_test_plugins_{uuid.uuid4().hex}"  # distinct: entry_points() keeps one per name
    dist_info = directory / f"{name}-0.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0\n")
    sections = (
        f"[{group}]\n" + "".join(f"{n} = {v}\n" for n, v in entries.items()) for group, entries in groups.items()
    )
    (dist_info / "entry_points.txt").write_text("\n".join(sections))
    sys.path.insert(0, str(directory))
    try:
        yield
    finally:
        sys.path.remove(str(directory))
