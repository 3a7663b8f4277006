"""Durable storage of the embedded broker: segment logs, indexes, producer state, transactions,
compaction.

Everything here is synchronous and meant to be called from the broker's single event-loop thread.
Batches are stored and served as bytes; only their 61-byte headers are parsed on the hot path.
"""

from onceflow.broker.storage.batch import (
    BatchHeader,
    ControlType,
    SimpleRecord,
    build_batch,
    build_control_batch,
    decode_records,
    iter_batches,
    next_offset_after,
    parse_header,
)
from onceflow.broker.storage.compaction import CompactionStats
from onceflow.broker.storage.config import LogConfig
from onceflow.broker.storage.errors import (
    CorruptRecordError,
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTopicConfig,
    InvalidTxnStateError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
    StorageError,
    UnknownProducerIdError,
    UnsupportedCompressionError,
)
from onceflow.broker.storage.partition_log import AppendInfo, PartitionLog
from onceflow.broker.storage.producer_state import (
    BatchMetadata,
    CompletedTransaction,
    OngoingTransactions,
    ProducerEntry,
    ProducerStateManager,
)
from onceflow.broker.storage.transaction_index import AbortedTransaction, AbortedTxn

__all__ = [
    "AbortedTransaction",
    "AbortedTxn",
    "AppendInfo",
    "BatchHeader",
    "BatchMetadata",
    "CompactionStats",
    "CompletedTransaction",
    "ControlType",
    "CorruptRecordError",
    "DuplicateSequenceError",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "InvalidTopicConfig",
    "InvalidTxnStateError",
    "LogConfig",
    "OffsetOutOfRangeError",
    "OngoingTransactions",
    "OutOfOrderSequenceError",
    "PartitionLog",
    "ProducerEntry",
    "ProducerStateManager",
    "RecordTooLargeError",
    "SimpleRecord",
    "StorageError",
    "UnknownProducerIdError",
    "UnsupportedCompressionError",
    "build_batch",
    "build_control_batch",
    "decode_records",
    "iter_batches",
    "next_offset_after",
    "parse_header",
]
