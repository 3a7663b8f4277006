"""Pytest fixtures for an S3 API store (S3Proxy), available to every package's tests (pytest11 plugin).

- ``s3proxy``: an :class:`~onceflow.testing.s3.process.S3ProxyProcess` started once per session with
  the bucket ``onceflow``; tests share it, so each stages under a prefix of its own
  (``s3proxy.uri(f"{tmp_path.name}/staging")``). It fails (never skips) when ``make setup`` has not
  fetched the jars. While it runs, this test process has the AWS checksum variables S3Proxy needs
  (:data:`~onceflow.testing.s3.process.CLIENT_CHECKSUM_ENV`).
- ``s3proxy_factory``: ``s3proxy_factory(data_dir=None, **options)`` starts a private S3Proxy (for
  tests that ``kill -9`` or restart it); all are stopped after the test.

Importing this module is cheap (the stdlib and the launcher).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from onceflow.testing.jars import start_or_fail
from onceflow.testing.s3.process import CLIENT_CHECKSUM_ENV, S3ProxyProcess

S3ProxyFactory = Callable[..., S3ProxyProcess]


def _start(data_dir: Path, **options: Any) -> S3ProxyProcess:
    return start_or_fail(S3ProxyProcess(data_dir, **options).start)


@pytest.fixture(scope="session")
def _s3_client_checksums() -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in CLIENT_CHECKSUM_ENV}
    os.environ.update(CLIENT_CHECKSUM_ENV)
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def s3proxy(tmp_path_factory: pytest.TempPathFactory, _s3_client_checksums: None) -> Iterator[S3ProxyProcess]:
    """A running S3Proxy shared by every test of the session; stopped at the end of it."""
    instance = _start(tmp_path_factory.mktemp("s3proxy"))
    yield instance
    instance.stop()


@pytest.fixture
def s3proxy_factory(tmp_path_factory: pytest.TempPathFactory, _s3_client_checksums: None) -> Iterator[S3ProxyFactory]:
    """Start private S3Proxy instances on demand; every one is stopped (SIGTERM, then SIGKILL) at teardown."""
    started: list[S3ProxyProcess] = []

    def factory(data_dir: Path | None = None, **options: Any) -> S3ProxyProcess:
        instance = _start(data_dir if data_dir is not None else tmp_path_factory.mktemp("s3proxy"), **options)
        started.append(instance)
        return instance

    yield factory
    for instance in started:
        instance.stop()
