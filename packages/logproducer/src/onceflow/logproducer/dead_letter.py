"""Dead-letter records: a line that cannot be parsed goes to the dead-letter topic.

A dead letter always fits in a Kafka message (the topic's default ``max.message.bytes`` is 1 MB,
and the tailer hands on lines of up to 1 MiB): the value is the original line, cut to
``max_value_bytes`` (64 KiB by default). The headers say why and what was cut:

- ``onceflow.error.reason``: what was wrong, for people (cut to 1 KiB);
- ``onceflow.error.kind``: which rule the line broke (``MalformedKind``: ``bad_timestamp``, ...);
- ``onceflow.error.original.length``: the byte length of the whole line (decimal); more than the
  value's length when the value was cut;
- ``onceflow.error.original.sha256``: hex SHA-256 of the whole line;
- ``onceflow.source`` and ``onceflow.source.offset``: the file and the line's byte offset in it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

from onceflow.runtime.api.source import SourceRecord

__all__ = [
    "DEFAULT_MAX_VALUE_BYTES",
    "KIND_HEADER",
    "OFFSET_HEADER",
    "ORIGINAL_LENGTH_HEADER",
    "ORIGINAL_SHA256_HEADER",
    "REASON_HEADER",
    "SOURCE_HEADER",
    "dead_letter_record",
]

REASON_HEADER: Final = "onceflow.error.reason"
KIND_HEADER: Final = "onceflow.error.kind"
ORIGINAL_LENGTH_HEADER: Final = "onceflow.error.original.length"
ORIGINAL_SHA256_HEADER: Final = "onceflow.error.original.sha256"
SOURCE_HEADER: Final = "onceflow.source"
OFFSET_HEADER: Final = "onceflow.source.offset"

DEFAULT_MAX_VALUE_BYTES: Final = 64 * 1024
_MAX_REASON_BYTES: Final = 1024


def dead_letter_record(
    topic: str,
    line: bytes,
    reason: str,
    *,
    kind: str,
    source: str,
    line_offset: int,
    source_partition: Mapping[str, Any],
    source_offset: Mapping[str, Any],
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
) -> SourceRecord:
    """The dead letter of ``line``: value = the line's first ``max_value_bytes`` bytes, headers as in
    the module docstring."""
    return SourceRecord(
        source_partition,
        source_offset,
        topic,
        line[:max_value_bytes],
        None,
        headers=[
            (REASON_HEADER, reason.encode()[:_MAX_REASON_BYTES]),
            (KIND_HEADER, kind.encode()),
            (ORIGINAL_LENGTH_HEADER, str(len(line)).encode()),
            (ORIGINAL_SHA256_HEADER, hashlib.sha256(line).hexdigest().encode()),
            (SOURCE_HEADER, source.encode()),
            (OFFSET_HEADER, str(line_offset).encode()),
        ],
    )
