"""The Participant gRPC server's parts: servicer, recovery, settings, sink factory (the service itself is
:class:`onceflow.sinks.service.ParticipantServer`)."""

from onceflow.sinks.server.recovery import CoordinatorOutcomes, RecoveryInterrupted
from onceflow.sinks.server.servicer import SERVICE_NAME, ParticipantServicer
from onceflow.sinks.server.settings import (
    CoordinatorClientSettings,
    DeltaSink,
    IcebergSink,
    KafkaOptions,
    KafkaSink,
    ParticipantSettings,
    PostgresOptions,
    PostgresSink,
    SinkSettings,
    SqliteOptions,
    SqliteSink,
)

__all__ = [
    "SERVICE_NAME",
    "CoordinatorClientSettings",
    "CoordinatorOutcomes",
    "DeltaSink",
    "IcebergSink",
    "KafkaOptions",
    "KafkaSink",
    "ParticipantServicer",
    "ParticipantSettings",
    "PostgresOptions",
    "PostgresSink",
    "RecoveryInterrupted",
    "SinkSettings",
    "SqliteOptions",
    "SqliteSink",
]
