"""The two-phase-commit engine: a plain domain object, testable without gRPC."""

from onceflow.coordinator.engine.config import Backoff, EngineConfig
from onceflow.coordinator.engine.engine import StagingCollector, TwoPhaseCommitEngine
from onceflow.coordinator.engine.recovery import RecoveryReport
from onceflow.coordinator.engine.state import TransactionStateManager

#: The Flink/Kafka name of the same thing.
TransactionCoordinator = TwoPhaseCommitEngine

__all__ = [
    "Backoff",
    "EngineConfig",
    "RecoveryReport",
    "StagingCollector",
    "TransactionCoordinator",
    "TransactionStateManager",
    "TwoPhaseCommitEngine",
]
