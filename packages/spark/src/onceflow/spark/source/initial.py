"""The query's initial offsets, resolved once and kept beside the checkpoint.

Spark does not log a V2 source's initial offset: when the first micro-batch is re-run after a
crash it asks ``initialOffset()`` again. ``latest`` (or ``earliest`` after retention moved) would then
answer differently, and the replayed batch would read other records. Like Spark's own Kafka source,
the first answer is written to a small file and every later call returns that file's content.
"""

from __future__ import annotations

import json

from onceflow.contract.staging import StagedFileMissing, default_store, parse_staging_uri
from onceflow.spark.source.offsets import PartitionOffsets


def load_initial_offsets(path: str) -> PartitionOffsets | None:
    """The offsets stored at ``path`` (local, or ``s3://``/``s3a://``), or None when none were stored yet."""
    try:
        data = default_store().read(parse_staging_uri(path))
    except StagedFileMissing:
        return None
    doc = json.loads(data.decode("utf-8"))
    return {int(p): int(o) for p, o in doc["offsets"].items()}


def store_initial_offsets(path: str, topic: str, offsets: PartitionOffsets) -> PartitionOffsets:
    """Store ``offsets`` at ``path`` unless another call stored some first; returns the stored ones.

    The file is published whole (a temporary file renamed, or one S3 upload), never half-written.
    """
    existing = load_initial_offsets(path)
    if existing is not None:
        return existing
    doc = {"topic": topic, "offsets": {str(p): o for p, o in sorted(offsets.items())}}
    default_store().publish(parse_staging_uri(path), json.dumps(doc).encode("utf-8"))
    return offsets
