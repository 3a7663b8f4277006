"""The 61-byte header of a v2 record batch, and whole-batch validation without decoding records.

Layout (big-endian), as in the Kafka message format v2::

    0 baseOffset int64 | 8 batchLength int32 | 12 partitionLeaderEpoch int32 | 16 magic int8
    17 crc uint32 | 21 attributes int16 | 23 lastOffsetDelta int32 | 27 baseTimestamp int64
    35 maxTimestamp int64 | 43 producerId int64 | 51 producerEpoch int16 | 53 baseSequence int32
    57 recordCount int32 | 61 records...

The CRC32C covers attributes through the end of the batch, so the base offset (and the partition
leader epoch) may be rewritten without recomputing it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from crc32c import crc32c

from onceflow.broker.storage.errors import CorruptRecordError

HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER_STRUCT.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes not counted by batchLength
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
MAGIC_OFFSET = 16
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49
_LENGTH = struct.Struct(">qi")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The parsed header fields of one v2 record batch (the records themselves stay encoded)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def last_offset(self) -> int:
        """Offset of the last record in the batch."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """Offset following the batch."""
        return self.base_offset + self.last_offset_delta + 1

    @property
    def last_sequence(self) -> int:
        """Sequence number of the last record, wrapping at int32 like Kafka."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return (self.attributes & TIMESTAMP_TYPE_FLAG) >> 3

    @property
    def compression(self) -> int:
        """0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        return self.attributes & COMPRESSION_MASK

    @property
    def size(self) -> int:
        """Size of the whole batch in bytes, header included."""
        return self.batch_length + LOG_OVERHEAD


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the header at ``pos``; raises CorruptRecordError if it is short, not magic 2, or too small.

    The CRC is not checked here (see :func:`verify_batch`).
    """
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(f"truncated header ({len(buf) - pos} bytes)", position=pos)
    header = BatchHeader(*HEADER_STRUCT.unpack_from(buf, pos))
    if header.magic != 2:
        raise CorruptRecordError(f"unsupported magic {header.magic}", position=pos)
    if header.batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(f"batchLength {header.batch_length} below minimum", position=pos)
    return header


def verify_batch(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> None:
    """Check that the whole batch is present and that its CRC32C matches; raises CorruptRecordError."""
    end = pos + header.size
    if end > len(buf):
        raise CorruptRecordError(
            f"truncated batch: batchLength {header.batch_length} but only {len(buf) - pos} bytes", position=pos
        )
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    actual = crc32c(view[pos + ATTRIBUTES_OFFSET : end])
    if actual != header.crc:
        raise CorruptRecordError(f"CRC mismatch (stored {header.crc:#010x}, computed {actual:#010x})", position=pos)


def iter_batches(
    buf: bytes | bytearray | memoryview, *, verify_crc: bool = True, allow_partial_tail: bool = False
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each whole batch in ``buf``, in order.

    Raises CorruptRecordError on bad magic, bad CRC (when ``verify_crc``) or a truncated batch. With
    ``allow_partial_tail`` an incomplete last batch ends the iteration instead (as in a fetch response).
    """
    pos = 0
    total = len(buf)
    while pos < total:
        if allow_partial_tail and total - pos < HEADER_SIZE:
            return
        header = parse_header(buf, pos)
        if allow_partial_tail and pos + header.size > total:
            return
        if verify_crc:
            verify_batch(buf, pos, header)
        elif pos + header.size > total:
            raise CorruptRecordError("truncated batch", position=pos)
        yield pos, header
        pos += header.size


def batch_lengths(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """Return ``(base_offset, size)`` of the batch at ``pos`` reading only its first 12 bytes."""
    base_offset, batch_length = _LENGTH.unpack_from(buf, pos)
    return base_offset, batch_length + LOG_OVERHEAD


def next_offset_after(buf: bytes | bytearray | memoryview) -> int:
    """Offset following the last whole batch in ``buf`` (a run of stored batches), reading only the
    length of each batch and the header of the last one; -1 if ``buf`` holds no whole batch."""
    pos = 0
    last = -1
    while len(buf) - pos >= HEADER_SIZE:
        _base_offset, size = batch_lengths(buf, pos)
        if pos + size > len(buf):
            break
        last = pos
        pos += size
    return -1 if last < 0 else parse_header(buf, last).next_offset
