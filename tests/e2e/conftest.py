"""Fixtures of the end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .demo_process import DemoProcess


@pytest.fixture
def demos() -> Iterator[list[DemoProcess]]:
    """Every demo a test starts: interrupted (its services stopped) if still running, and its
    PostgreSQL data removed."""
    started: list[DemoProcess] = []
    yield started
    for demo in started:
        if demo.process.poll() is None:
            demo.interrupt()
            try:
                demo.process.wait(180)
            except Exception:
                demo.kill_everything()
        demo.remove_postgres_fallback()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist turns the group into the test's node id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A Spark driver JVM takes both cores: with pytest-xdist (``make test`` runs two workers, with
    ``--dist loadgroup``) every test that starts one runs on the same worker, one after another."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("spark"))
