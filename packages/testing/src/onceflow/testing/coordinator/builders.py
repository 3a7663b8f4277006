"""Test data: staged files as Spark tasks report them, and engine timings short enough for tests."""

from __future__ import annotations

import hashlib

from onceflow.contract.staging import StagedFile
from onceflow.coordinator.engine.config import Backoff, EngineConfig

#: Engine timings for tests: 1 s prepare timeout, 2 s commit wait, 20 ms..200 ms commit backoff.
FAST_ENGINE_CONFIG = EngineConfig(
    prepare_timeout=1.0,
    commit_wait=2.0,
    commit_call_timeout=1.0,
    commit_backoff=Backoff(initial=0.02, maximum=0.2, multiplier=2.0),
    abort_timeout=1.0,
)


def staged_files(job: str, batch: int, files: int = 2, rows: int = 500) -> list[StagedFile]:
    """``files`` staged files of ``rows`` rows each under ``file:///staging/<job>/<batch>/`` (never read)."""
    return [
        StagedFile(
            uri=f"file:///staging/{job}/{batch}/part-{i}-attempt-0.avro",
            count=rows,
            sha256=hashlib.sha256(f"{job}-{batch}-{i}".encode()).hexdigest(),
        )
        for i in range(files)
    ]
