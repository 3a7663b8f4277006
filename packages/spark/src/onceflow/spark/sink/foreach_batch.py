"""Update mode through ``foreachBatch``: PySpark's Python streaming sinks accept append mode only.

Each micro-batch's frame is written with the ``onceflow-2pc`` *batch* writer under the micro-batch's
id, so the transaction is still ``<job>:<batch>`` and a replayed batch is answered COMMITTED.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import DataFrame


def two_phase_commit_batches(options: Mapping[str, str]) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function writing each micro-batch through 2PC with ``options``."""
    fixed = dict(options)

    def write_batch(frame: DataFrame, batch_id: int) -> None:
        frame.write.format("onceflow-2pc").options(**fixed).option("batchId", str(batch_id)).mode("append").save()

    return write_batch
