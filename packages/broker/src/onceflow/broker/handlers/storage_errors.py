"""Translation of storage-layer exceptions into Kafka error codes, at the request boundary."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from onceflow.broker.storage.errors import (
    CorruptRecordError,
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTopicConfig,
    InvalidTxnStateError,
    LogWriteError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
    StorageError,
    UnknownProducerIdError,
    UnsupportedCompressionError,
)

_CODES: tuple[tuple[type[StorageError], ErrorCode], ...] = (
    (CorruptRecordError, ErrorCode.corrupt_message),
    (InvalidRecordError, ErrorCode.invalid_record),
    (UnsupportedCompressionError, ErrorCode.unsupported_compression_type),
    (RecordTooLargeError, ErrorCode.message_too_large),
    (DuplicateSequenceError, ErrorCode.duplicate_sequence_number),
    (OutOfOrderSequenceError, ErrorCode.out_of_order_sequence_number),
    (InvalidProducerEpochError, ErrorCode.invalid_producer_epoch),
    (InvalidTxnStateError, ErrorCode.invalid_txn_state),
    (UnknownProducerIdError, ErrorCode.unknown_producer_id),
    (OffsetOutOfRangeError, ErrorCode.offset_out_of_range),
    (InvalidTopicConfig, ErrorCode.invalid_config),
    (LogWriteError, ErrorCode.kafka_storage_error),
)


def error_code_for(exc: StorageError) -> ErrorCode:
    """The Kafka error code a client gets for ``exc`` (KAFKA_STORAGE_ERROR if unmapped)."""
    for kind, code in _CODES:
        if isinstance(exc, kind):
            return code
    return ErrorCode.kafka_storage_error
