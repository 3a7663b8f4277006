"""Admin tools that talk to a broker over the Kafka protocol (no client library needed)."""

from onceflow.broker.admin.connection import KafkaConnection
from onceflow.broker.admin.transactions import (
    OPEN_STATES,
    TransactionAdminError,
    TransactionInfo,
    TransactionsAdmin,
)

__all__ = ["OPEN_STATES", "KafkaConnection", "TransactionAdminError", "TransactionInfo", "TransactionsAdmin"]
