"""onceflow.sinks: two-phase-commit sink participants and the Participant gRPC server.

- :mod:`onceflow.sinks.base`: the :class:`SinkParticipant` contract (Flink's 2PC sink lifecycle);
- :mod:`onceflow.sinks.sqlite`, :mod:`onceflow.sinks.postgres`, :mod:`onceflow.sinks.kafka`: the sinks;
- :mod:`onceflow.sinks.server`: the gRPC server hosting named sinks (``onceflow participant``);
- (tests) :mod:`onceflow.testing.sinks`, in the separate onceflow-testing package: a real PostgreSQL server fixture.
"""

from onceflow.sinks.base import SinkParticipant
from onceflow.sinks.exceptions import (
    PreparedTransactionsDisabled,
    PrepareRejected,
    SinkError,
    TransactionAlreadyCommitted,
    TransactionNotPrepared,
)

__all__ = [
    "PrepareRejected",
    "PreparedTransactionsDisabled",
    "SinkError",
    "SinkParticipant",
    "TransactionAlreadyCommitted",
    "TransactionNotPrepared",
]
