"""The IP-count example's gRPC API (``onceflow.v1.IpCounts``, ipcount.proto), served by its consumer
extension beside the consumer's Results service: its values (:mod:`.values`), their conversions to and
from the messages (:mod:`.convert`) and its typed client (:class:`IpCountsClient`)."""

from onceflow.ipcount.api.client import IpCountsClient
from onceflow.ipcount.api.values import (
    AuditSummary,
    CountMismatch,
    GeneratorTruth,
    IpCount,
    IpCountsUpdate,
    SinkAuditSummary,
    SourceTopicTruth,
    TopIpCounts,
)

__all__ = [
    "AuditSummary",
    "CountMismatch",
    "GeneratorTruth",
    "IpCount",
    "IpCountsClient",
    "IpCountsUpdate",
    "SinkAuditSummary",
    "SourceTopicTruth",
    "TopIpCounts",
]
