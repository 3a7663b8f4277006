"""Which micro-batch a Spark task belongs to."""

from __future__ import annotations

from pyspark import TaskContext

#: Local property Spark's micro-batch execution sets on every task of a batch.
BATCH_ID_PROPERTY = "streaming.sql.batchId"


def current_batch_id() -> int:
    """The micro-batch the calling task belongs to."""
    context = TaskContext.get()
    raw = context.getLocalProperty(BATCH_ID_PROPERTY) if context is not None else None
    if raw is None:
        raise RuntimeError(f"task has no {BATCH_ID_PROPERTY!r} local property: is it running in a streaming query?")
    return int(raw)
