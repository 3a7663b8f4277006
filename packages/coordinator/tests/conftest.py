"""Shared fixtures: engines on an in-memory log with in-process fake participants."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from onceflow.coordinator.engine import EngineConfig, TwoPhaseCommitEngine
from onceflow.coordinator.log import MemoryLogStorage, MemoryTransactionLog
from onceflow.testing.coordinator import FAST_ENGINE_CONFIG, FakeParticipants

JOB = "ipcount"
EngineFactory = Callable[..., TwoPhaseCommitEngine]


@pytest.fixture
def fakes() -> FakeParticipants:
    return FakeParticipants(["kafka", "sqlite", "postgres"])


@pytest.fixture
def storage() -> MemoryLogStorage:
    return MemoryLogStorage()


@pytest.fixture
def engine_factory(fakes: FakeParticipants, storage: MemoryLogStorage) -> Iterator[EngineFactory]:
    """New engine instances over the same log storage (a restart) and the same participants."""
    engines: list[TwoPhaseCommitEngine] = []

    def factory(config: EngineConfig = FAST_ENGINE_CONFIG, **kwargs: object) -> TwoPhaseCommitEngine:
        engine = TwoPhaseCommitEngine(MemoryTransactionLog(storage), fakes, config, **kwargs)  # type: ignore[arg-type]
        engines.append(engine)
        engine.start()
        return engine

    yield factory
    for engine in engines:
        engine.close()


@pytest.fixture
def engine(engine_factory: EngineFactory) -> TwoPhaseCommitEngine:
    return engine_factory()


@pytest.fixture
def epoch(engine: TwoPhaseCommitEngine, fakes: FakeParticipants) -> int:
    """The job registered with a writer and all three participants; the writer's epoch."""
    registered = engine.register_writer(JOB, "driver-1")
    engine.register_participants(JOB, registered.epoch, fakes.refs)
    return registered.epoch
