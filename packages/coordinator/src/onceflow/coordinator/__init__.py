"""onceflow.coordinator: the gRPC transaction coordinator (presumed-abort 2PC per micro-batch).

Sub-packages and modules, one concept each:

- :mod:`~onceflow.coordinator.engine`: :class:`TwoPhaseCommitEngine`, the protocol as a plain object
  (commit, abort, resolve, recovery, commit delivery with backoff);
- :mod:`~onceflow.coordinator.log`: the :class:`TransactionLog` ABC, in-memory and Kafka backends;
- :mod:`~onceflow.coordinator.participants`: the :class:`ParticipantConnection` ABC and its gRPC connection;
- :mod:`~onceflow.coordinator.service`: :class:`CoordinatorServer`, the service (``onceflow coordinator``);
- :mod:`~onceflow.coordinator.servicer` and :mod:`~onceflow.coordinator.convert`: its thin gRPC servicer
  and the to_proto/from_proto it uses;
- :mod:`~onceflow.coordinator.election` and :mod:`~onceflow.coordinator.standby`: which instance is
  active (a consumer group on the log topic) and the take-over of a standby that becomes it;
- :mod:`~onceflow.coordinator.cli`: ``onceflow coordinator`` and ``onceflow txn``;
- (tests) :mod:`onceflow.testing.coordinator`, in the separate onceflow-testing package: fakes, CoordinatorProcess.
"""

from onceflow.coordinator.engine import EngineConfig, TwoPhaseCommitEngine
from onceflow.coordinator.exceptions import CoordinatorError, CoordinatorFenced, CoordinatorStopped
from onceflow.coordinator.log import MemoryTransactionLog, TransactionLog
from onceflow.coordinator.log.kafka import KafkaTransactionLog
from onceflow.coordinator.model import JobState, Transaction
from onceflow.coordinator.participants import GrpcParticipantConnector, ParticipantConnection, ParticipantConnector
from onceflow.coordinator.settings import CoordinatorSettings

__all__ = [
    "CoordinatorError",
    "CoordinatorFenced",
    "CoordinatorSettings",
    "CoordinatorStopped",
    "EngineConfig",
    "GrpcParticipantConnector",
    "JobState",
    "KafkaTransactionLog",
    "MemoryTransactionLog",
    "ParticipantConnection",
    "ParticipantConnector",
    "Transaction",
    "TransactionLog",
    "TwoPhaseCommitEngine",
]
