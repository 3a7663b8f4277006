"""Pytest fixtures for a real broker process, available to every package's tests (pytest11 plugin).

- ``broker``: a started :class:`EmbeddedBroker` on a fresh temporary data dir and a free port,
  stopped after the test. If the test fails, the tail of the broker log is printed.
- ``broker_factory``: ``broker_factory(data_dir=None, **options)`` starts further brokers (or a new
  one on an existing dir, e.g. to restart); all are stopped after the test.

Importing this module is cheap: only the stdlib and :mod:`onceflow.broker.embedded`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from onceflow.broker.embedded import EmbeddedBroker

BrokerFactory = Callable[..., EmbeddedBroker]


@pytest.fixture
def broker_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerFactory]:
    """Start brokers on demand; every one is stopped (SIGTERM, then SIGKILL) at teardown."""
    started: list[EmbeddedBroker] = []

    def factory(data_dir: Path | None = None, port: int = 0, **options: Any) -> EmbeddedBroker:
        directory = data_dir if data_dir is not None else tmp_path_factory.mktemp("broker")
        instance = EmbeddedBroker(directory, port, **options)
        started.append(instance)
        return instance.start()

    yield factory
    for instance in started:
        instance.stop()


@pytest.fixture
def broker(broker_factory: BrokerFactory, request: pytest.FixtureRequest) -> Iterator[EmbeddedBroker]:
    """A running broker on a fresh data dir and free port."""
    instance = broker_factory()
    yield instance
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        sys.stderr.write(f"\n--- broker log ({instance.log_path}) ---\n{instance.log_tail()}\n")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Remember each phase's report on the item so fixtures can tell whether the test failed."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
