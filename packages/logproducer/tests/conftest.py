"""Helpers of the tests that tail a log file through a real connect worker."""

from __future__ import annotations

import time
from pathlib import Path

from onceflow.runtime.config.worker_settings import WorkerSettings
from onceflow.runtime.service import ConnectWorkerService


def start_worker(bootstrap: str, log: Path) -> ConnectWorkerService:
    """A connect worker on ``bootstrap`` that may read files in ``log``'s directory."""
    settings = WorkerSettings.model_validate(
        {"kafka": {"bootstrap_servers": bootstrap}, "server": {"port": 0}, "allowed_paths": [str(log.parent)]}
    )
    return ConnectWorkerService(settings).start()


def wait_tailed(service: ConnectWorkerService, name: str, log: Path, timeout: float = 30.0) -> None:
    """Wait until connector ``name`` committed the position at the end of ``log``."""
    assert service.herder is not None
    deadline = time.monotonic() + timeout
    while True:
        offsets = service.herder.connector_offsets(name)
        if offsets and offsets[0][1]["offset"] == log.stat().st_size:
            return
        assert time.monotonic() < deadline, offsets
        time.sleep(0.1)
