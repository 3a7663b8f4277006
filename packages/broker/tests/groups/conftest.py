"""Fixtures for driving a real GroupCoordinator (real state log in a tmp dir) from asyncio tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onceflow.broker.groups import GroupCoordinator

CoordinatorFactory = Callable[..., GroupCoordinator]


@pytest.fixture
def new_coordinator(tmp_path: Path) -> CoordinatorFactory:
    """Build (not start) a coordinator on ``tmp_path`` with short timers; keyword arguments override."""

    def build(**overrides: Any) -> GroupCoordinator:
        settings: dict[str, Any] = {
            "fsync": False,
            "group_initial_rebalance_delay_ms": 50,
            "group_min_session_timeout_ms": 10,
            "timer_tick_ms": 5,
            **overrides,
        }
        return GroupCoordinator(tmp_path / "data", **settings)

    return build
