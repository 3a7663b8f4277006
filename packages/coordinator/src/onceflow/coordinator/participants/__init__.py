"""Participant connections: the :class:`ParticipantConnection` ABC and its gRPC implementation."""

from onceflow.coordinator.participants.base import (
    ParticipantConnection,
    ParticipantConnector,
    ParticipantFailed,
    ParticipantUnavailable,
)
from onceflow.coordinator.participants.grpc_client import GrpcParticipantConnection, GrpcParticipantConnector

__all__ = [
    "GrpcParticipantConnection",
    "GrpcParticipantConnector",
    "ParticipantConnection",
    "ParticipantConnector",
    "ParticipantFailed",
    "ParticipantUnavailable",
]
