"""The transaction coordinator of the embedded broker: transactional ids, epochs and fencing,
two-phase transaction end with COMMIT/ABORT markers, timeouts, and recovery (KIP-98, KIP-360,
KIP-447, KIP-588).

The broker wiring supplies a ``MarkerWriter`` over its partition logs and a durable producer-id
allocator; see ``TransactionCoordinator``.
"""

from onceflow.broker.transactions.coordinator import TransactionCoordinator
from onceflow.broker.transactions.exceptions import (
    IllegalTransactionTransition,
    InvalidTransactionRecord,
    MarkerWriteError,
    TransactionCompletionInterrupted,
    TransactionCoordinatorError,
)
from onceflow.broker.transactions.markers import MarkerWriter, TransactionMarker
from onceflow.broker.transactions.metadata import TransactionMetadata
from onceflow.broker.transactions.results import InitProducerIdResult, TransactionDescription, TransactionListing
from onceflow.broker.transactions.state import KafkaTransactionState
from onceflow.broker.transactions.store import FILE_NAME as TRANSACTION_LOG_FILE_NAME
from onceflow.broker.transactions.timeouts import SweepReport

__all__ = [
    "TRANSACTION_LOG_FILE_NAME",
    "IllegalTransactionTransition",
    "InitProducerIdResult",
    "InvalidTransactionRecord",
    "KafkaTransactionState",
    "MarkerWriteError",
    "MarkerWriter",
    "SweepReport",
    "TransactionCompletionInterrupted",
    "TransactionCoordinator",
    "TransactionCoordinatorError",
    "TransactionDescription",
    "TransactionListing",
    "TransactionMarker",
    "TransactionMetadata",
]
