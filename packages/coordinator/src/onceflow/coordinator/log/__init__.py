"""The coordinator's durable decision log: the :class:`TransactionLog` ABC and its backends."""

from onceflow.coordinator.log.base import TransactionLog
from onceflow.coordinator.log.memory import MemoryLogStorage, MemoryTransactionLog
from onceflow.coordinator.log.records import LogRecord, Tombstone, decode, encode, record_key

__all__ = [
    "LogRecord",
    "MemoryLogStorage",
    "MemoryTransactionLog",
    "Tombstone",
    "TransactionLog",
    "decode",
    "encode",
    "record_key",
]
