"""Exceptions raised by the partition storage layer.

Every error subclasses :class:`StorageError`. Each maps to one Kafka error code, so the protocol layer
can translate it at the request boundary without inspecting messages.
"""

from __future__ import annotations


class StorageError(Exception):
    """Base class of every storage-layer error."""


class CorruptRecordError(StorageError):
    """A record batch is malformed: bad magic, bad CRC, truncated, or an inconsistent length.

    ``position`` is the byte position of the bad batch inside the buffer or segment it was read from;
    recovery truncates a torn segment tail there. The message names the topic-partition once the
    partition log has attached it (see :meth:`for_partition`).
    """

    def __init__(self, reason: str, *, position: int = 0, topic_partition: str | None = None) -> None:
        self.reason = reason
        self.position = position
        self.topic_partition = topic_partition
        where = f"{topic_partition}: " if topic_partition else ""
        super().__init__(f"{where}corrupt record batch at byte {position}: {reason}")

    def for_partition(self, topic: str, partition: int) -> CorruptRecordError:
        """Return the same error with the topic-partition named in its message."""
        return CorruptRecordError(self.reason, position=self.position, topic_partition=f"{topic}-{partition}")


class InvalidRecordError(StorageError):
    """A well-formed batch that a client may not write (e.g. a control batch, bad offset delta)."""


class UnsupportedCompressionError(StorageError):
    """A batch uses a compression codec this process cannot decode (only needed off the hot path)."""


class RecordTooLargeError(StorageError):
    """A batch is larger than ``max.message.bytes`` or than a whole segment."""


class DuplicateSequenceError(StorageError):
    """A retried idempotent batch is already in the log; nothing was written.

    The Produce handler answers success with ``base_offset`` (the offset originally assigned) and
    ``log_append_time_ms`` (-1 unless the topic uses LogAppendTime).
    """

    def __init__(self, producer_id: int, base_sequence: int, base_offset: int, log_append_time_ms: int) -> None:
        self.producer_id = producer_id
        self.base_sequence = base_sequence
        self.base_offset = base_offset
        self.log_append_time_ms = log_append_time_ms
        super().__init__(
            f"duplicate batch pid={producer_id} seq={base_sequence} already written at offset {base_offset}"
        )


class OutOfOrderSequenceError(StorageError):
    """An idempotent batch's first sequence does not follow the last one written for its producer."""


class InvalidProducerEpochError(StorageError):
    """A batch or marker carries an epoch older than the one known for its producer id."""


class InvalidTxnStateError(StorageError):
    """A producer with an open transaction in the partition wrote a non-transactional batch."""


class UnknownProducerIdError(StorageError):
    """Reserved: this broker follows Kafka >= 2.5 and accepts unknown producer ids (KIP-360)."""


class OffsetOutOfRangeError(StorageError):
    """A fetch offset lies below the log start offset or above the log end offset."""


class LogWriteError(StorageError):
    """A write to a partition's files failed (disk full, I/O error, short write): Kafka's
    KAFKA_STORAGE_ERROR.

    Nothing of the failed append is kept: the files were truncated back to their size before it and
    the in-memory state is unchanged, so the write was never acknowledged and its offsets are reused
    by the next successful append. ``partition_offline`` is True when even that rollback failed; the
    partition then refuses appends until a later rollback succeeds.
    """

    def __init__(self, topic_partition: str, reason: str, *, partition_offline: bool = False) -> None:
        self.topic_partition = topic_partition
        self.reason = reason
        self.partition_offline = partition_offline
        state = "partition offline" if partition_offline else "rolled back"
        super().__init__(f"{topic_partition}: write failed ({state}): {reason}")


class InvalidTopicConfig(StorageError):  # noqa: N818 -- the name other packages code against
    """A topic config has an unknown name or a bad value; ``name`` is the Kafka config name."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"invalid topic config {name!r}: {reason}")
