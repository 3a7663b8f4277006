"""Scanning a segment-format file batch by batch: CRC-checked (recovery) or headers only (compaction swaps)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from onceflow.broker.storage.errors import CorruptRecordError
from onceflow.broker.storage.header import HEADER_SIZE, BatchHeader, parse_header, verify_batch

_SCAN_CHUNK = 1 << 20


def verified_batches(fd: int, size: int) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each batch in the first ``size`` bytes of the segment file ``fd``, CRC
    checked, reading in large chunks; raises CorruptRecordError (with the position) at a torn or bad batch."""
    pos = 0
    while pos < size:
        chunk = os.pread(fd, min(_SCAN_CHUNK, size - pos), pos)
        offset = 0
        while offset < len(chunk):
            if len(chunk) - offset < HEADER_SIZE:
                if pos + offset + HEADER_SIZE > size:
                    raise CorruptRecordError("truncated header", position=pos + offset)
                break
            header = parse_header(chunk, offset)
            if offset + header.size > len(chunk):
                if pos + offset + header.size > size:
                    raise CorruptRecordError("truncated batch", position=pos + offset)
                if offset == 0:  # a batch larger than the chunk
                    chunk = os.pread(fd, header.size, pos)
                else:
                    break
            try:
                verify_batch(chunk, offset, header)
            except CorruptRecordError as exc:
                raise CorruptRecordError(exc.reason, position=pos + offset) from None
            yield pos + offset, header
            offset += header.size
        pos += offset


def scan_next_offset(path: Path) -> int | None:
    """Offset after the last whole batch of a segment-format file (headers only), or None if empty."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        position = 0
        next_offset = None
        while size - position >= HEADER_SIZE:
            header = parse_header(os.pread(fd, HEADER_SIZE, position))
            if position + header.size > size:
                break
            next_offset = header.next_offset
            position += header.size
        return next_offset
    finally:
        os.close(fd)
