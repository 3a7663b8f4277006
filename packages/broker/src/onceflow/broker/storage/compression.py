"""Decompression of record-batch payloads, needed only off the hot path (compaction, internal logs).

Produce and Fetch move compressed batches as opaque bytes. Only codecs whose library is importable
are supported; others raise UnsupportedCompressionError.
"""

from __future__ import annotations

import gzip
import zlib

from onceflow.broker.storage.errors import UnsupportedCompressionError

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4
_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}


def decompress(codec: int, payload: bytes | memoryview) -> bytes:
    """Return the uncompressed records section of a batch compressed with ``codec``."""
    if codec == NONE:
        return bytes(payload)
    if codec == GZIP:
        try:
            return gzip.decompress(payload)
        except (OSError, EOFError, zlib.error) as exc:
            raise UnsupportedCompressionError(f"undecodable gzip payload: {exc}") from exc
    raise UnsupportedCompressionError(f"compression codec {_NAMES.get(codec, codec)} is not supported")


def compress(codec: int, payload: bytes) -> bytes:
    """Compress a records section with ``codec`` (none or gzip)."""
    if codec == NONE:
        return payload
    if codec == GZIP:
        return gzip.compress(payload, compresslevel=6, mtime=0)
    raise UnsupportedCompressionError(f"compression codec {_NAMES.get(codec, codec)} is not supported")
