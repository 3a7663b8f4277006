"""Participant clients: the :class:`ParticipantClient` ABC and its gRPC implementation."""

from onceflow.coordinator.participants.base import (
    ParticipantClient,
    ParticipantConnector,
    ParticipantFailed,
    ParticipantUnavailable,
    PrepareVote,
)
from onceflow.coordinator.participants.grpc_client import GrpcParticipantClient, GrpcParticipantConnector

__all__ = [
    "GrpcParticipantClient",
    "GrpcParticipantConnector",
    "ParticipantClient",
    "ParticipantConnector",
    "ParticipantFailed",
    "ParticipantUnavailable",
    "PrepareVote",
]
