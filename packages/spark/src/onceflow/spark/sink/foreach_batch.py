"""Writing each micro-batch through ``foreachBatch``: update mode (PySpark's Python streaming sinks
accept append mode only), and jobs with derived outputs (several outputs of one micro-batch).

Each micro-batch's frame is written with the ``onceflow-2pc`` *batch* writer under the micro-batch's
id, so the transaction is still ``<job>:<batch>`` and a replayed batch is answered COMMITTED.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pyspark.sql import DataFrame

#: A derived output: a function of the micro-batch's rows (a batch DataFrame) to the output's rows.
Derive = Callable[[DataFrame], DataFrame]


def two_phase_commit_batches(
    options: Mapping[str, str], derived: Mapping[str, Derive] | None = None
) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function writing each micro-batch through 2PC with ``options``.

    Steps, per micro-batch:
        1. With derived outputs: cache the micro-batch (each output reads it once more), and stage
           every derived output (``stageOnly``: tasks stage, the driver lists the files in a
           manifest; nothing commits yet).
        2. Write the micro-batch itself: its commit takes the derived outputs' manifests, so every
           output of the batch commits in one transaction, or none does.
    """
    fixed = dict(options)
    derived = dict(derived or {})
    if derived:
        fixed["derivedOutputs"] = ",".join(derived)

    def write_batch(frame: DataFrame, batch_id: int) -> None:
        batch = {**fixed, "batchId": str(batch_id)}
        if derived:
            frame = frame.persist()
        try:
            # Step 1
            for output, derive in derived.items():
                derive(frame).write.format("onceflow-2pc").options(**batch).option("output", output).option(
                    "stageOnly", "true"
                ).mode("append").save()
            # Step 2
            frame.write.format("onceflow-2pc").options(**batch).mode("append").save()
        finally:
            if derived:
                frame.unpersist()

    return write_batch
