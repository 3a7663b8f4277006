"""Public face of the v2 record batch: the header, validation, and record building/decoding.

Re-exports :mod:`header` (parsing without decoding, used on the hot path) and :mod:`records`
(encoding and decoding of records, used for internal logs, compaction and tests).
"""

from onceflow.broker.storage.header import (
    HEADER_SIZE,
    BatchHeader,
    iter_batches,
    next_offset_after,
    parse_header,
    verify_batch,
)
from onceflow.broker.storage.records import (
    ControlType,
    SimpleRecord,
    build_batch,
    build_control_batch,
    control_marker,
    control_type_of,
    decode_records,
    encode_batch,
)

__all__ = [
    "HEADER_SIZE",
    "BatchHeader",
    "ControlType",
    "SimpleRecord",
    "build_batch",
    "build_control_batch",
    "control_marker",
    "control_type_of",
    "decode_records",
    "encode_batch",
    "iter_batches",
    "next_offset_after",
    "parse_header",
    "verify_batch",
]
