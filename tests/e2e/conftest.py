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
        demo.stop()
        demo.remove_postgres_fallback()
