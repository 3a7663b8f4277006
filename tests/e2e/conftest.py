"""Fixtures of the end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator

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
