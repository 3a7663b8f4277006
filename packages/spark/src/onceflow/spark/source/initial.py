"""The query's initial offsets, resolved once and kept beside the checkpoint.

Spark does not log a V2 source's initial offset: when the first micro-batch is re-run after a
crash it asks ``initialOffset()`` again. ``latest`` (or ``earliest`` after retention moved) would then
answer differently, and the replayed batch would read other records. Like Spark's own Kafka source,
the first answer is written to a small file and every later call returns that file's content.
"""

from __future__ import annotations

import json
import uuid

from fsspec.core import url_to_fs  # type: ignore[import-untyped]

from onceflow.spark.source.offsets import PartitionOffsets


def load_initial_offsets(path: str) -> PartitionOffsets | None:
    """The offsets stored at ``path``, or None when none were stored yet."""
    fs, local = url_to_fs(path)
    if not fs.exists(local):
        return None
    with fs.open(local, "rb") as handle:
        doc = json.loads(handle.read().decode("utf-8"))
    return {int(p): int(o) for p, o in doc["offsets"].items()}


def store_initial_offsets(path: str, topic: str, offsets: PartitionOffsets) -> PartitionOffsets:
    """Store ``offsets`` at ``path`` unless another call stored some first; returns the stored ones."""
    existing = load_initial_offsets(path)
    if existing is not None:
        return existing
    fs, local = url_to_fs(path)
    parent = local.rsplit("/", 1)[0]
    fs.makedirs(parent, exist_ok=True)
    tmp = f"{parent}/.initial-offsets.{uuid.uuid4().hex}.tmp"
    doc = {"topic": topic, "offsets": {str(p): o for p, o in sorted(offsets.items())}}
    with fs.open(tmp, "wb") as handle:
        handle.write(json.dumps(doc).encode("utf-8"))
    fs.mv(tmp, local)
    return offsets
