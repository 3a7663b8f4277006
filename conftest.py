"""Suite-wide test ordering for ``make test`` (pytest-xdist with ``--dist loadfile --no-loadscope-reorder``;
without the last flag xdist sorts files by their number of tests, and the one-test chaos files ran last).

A file is one unit of work: its tests run in order on one worker, so a module-scoped fixture (a Spark
pipeline, a cluster) is set up once. The files that hold slow end-to-end and chaos tests go first and
the many short files last, so the short ones fill the gaps at the end instead of a ten-minute chaos
run starting when the other worker has nothing left to do.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files with a ``slow`` test first (the cross-package suites under tests/ before the packages'),
    then every other file in collection order; each file's tests keep their order."""
    files: dict[str, int] = {}
    slow: set[str] = set()
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        files.setdefault(path, len(files))
        if item.get_closest_marker("slow") is not None:
            slow.add(path)

    def rank(item: pytest.Item) -> tuple[int, int]:
        path = item.nodeid.split("::", 1)[0]
        return (0, -files[path]) if path in slow else (1, files[path])

    items.sort(key=rank)
