"""The two-phase-commit engine: a plain domain object, testable without gRPC."""

from onceflow.coordinator.engine.config import Backoff, EngineConfig
from onceflow.coordinator.engine.engine import StagingCollector, TwoPhaseCommitEngine
from onceflow.coordinator.engine.recovery import RecoveryReport
from onceflow.coordinator.engine.state import TransactionStateManager

__all__ = [
    "Backoff",
    "EngineConfig",
    "RecoveryReport",
    "StagingCollector",
    "TransactionStateManager",
    "TwoPhaseCommitEngine",
]
