"""Fixtures: in-process connect workers (ConnectWorkerService) against the real broker fixture."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.runtime.config.worker_settings import WorkerSettings
from onceflow.runtime.plugins import PluginRegistry
from onceflow.runtime.service import ConnectWorkerService
from onceflow.testing.runtime import CounterSourceConnector

ServiceFactory = Callable[..., ConnectWorkerService]


def plugins() -> PluginRegistry:
    registry = PluginRegistry.discover()
    registry.register("counter", CounterSourceConnector)
    return registry


@pytest.fixture
def service_factory(broker: EmbeddedBroker) -> Iterator[ServiceFactory]:
    started: list[ConnectWorkerService] = []

    def factory(**overrides: Any) -> ConnectWorkerService:
        doc: dict[str, Any] = {"kafka": {"bootstrap_servers": broker.bootstrap_servers}, "server": {"port": 0}}
        doc.update(overrides)
        service = ConnectWorkerService(WorkerSettings.model_validate(doc), plugins())
        started.append(service)
        return service.start()

    yield factory
    for service in started:
        service.stop()  # idempotent: a no-op for a service the test stopped


def wait_for(predicate: Callable[[], Any], timeout: float = 30, interval: float = 0.1, what: str = "condition") -> Any:
    """Poll ``predicate`` until it returns something truthy; that value is returned."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


@pytest.fixture
def waiter() -> Callable[..., Any]:
    return wait_for
