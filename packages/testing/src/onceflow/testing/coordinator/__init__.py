"""Test helpers: fake participants (in process or over gRPC) and the coordinator as a child process."""

from onceflow.testing.coordinator.builders import FAST_ENGINE_CONFIG, staged_files
from onceflow.testing.coordinator.fakes import (
    FakeParticipantConnection,
    FakeParticipants,
    FakeParticipantServer,
    FakeParticipantServicer,
    FakeSink,
)
from onceflow.testing.coordinator.process import CoordinatorProcess, log_topic_exists

__all__ = [
    "FAST_ENGINE_CONFIG",
    "CoordinatorProcess",
    "FakeParticipantConnection",
    "FakeParticipantServer",
    "FakeParticipantServicer",
    "FakeParticipants",
    "FakeSink",
    "log_topic_exists",
    "staged_files",
]
