"""Writing each micro-batch through ``foreachBatch``: update mode (PySpark's Python streaming sinks
accept append mode only), jobs with derived outputs (several outputs of one micro-batch), and jobs
whose driver stages the rows (``stage_on = "driver"``).

Each micro-batch's rows are staged and committed under the micro-batch's id, so the transaction is
still ``<job>:<batch>`` and a replayed batch is answered COMMITTED.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import pyarrow as pa
from pyspark.sql import DataFrame

from onceflow.spark.job.settings import StageOn
from onceflow.spark.sink.datasource import output_arrow_schema
from onceflow.spark.sink.messages import StagedFileMessage
from onceflow.spark.sink.options import SinkOptions, parse_sink_options
from onceflow.spark.sink.transaction import commit_batch, stage_driver_output
from onceflow.spark.sink.writer import process_faults

#: A derived output: a function of the micro-batch's rows (a batch DataFrame) to the output's rows.
Derive = Callable[[DataFrame], DataFrame]


def two_phase_commit_batches(
    options: Mapping[str, str], derived: Mapping[str, Derive] | None = None, *, stage_on: StageOn = "tasks"
) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function writing each micro-batch through 2PC with ``options``.

    Steps, per micro-batch:
        1. With derived outputs: cache the micro-batch (each output reads it once more).
        2. Stage every derived output. ``tasks``: the ``onceflow-2pc`` batch writer with
           ``stageOnly`` (tasks stage, the driver lists the files in a manifest; nothing commits
           yet). ``driver``: the driver collects the output's rows as Arrow and stages them.
        3. Write the micro-batch itself. ``tasks``: the batch writer, whose commit takes the derived
           outputs' manifests. ``driver``: collected and staged like the derived outputs, then
           committed with every file the driver staged (:func:`commit_batch`). Either way every
           output of the batch commits in one transaction, or none does.
    """
    fixed = dict(options)
    derived = dict(derived or {})
    if stage_on == "tasks" and derived:
        fixed["derivedOutputs"] = ",".join(derived)
    parsed = parse_sink_options(fixed)

    def write_batch(frame: DataFrame, batch_id: int) -> None:
        # Step 1
        if derived:
            frame = frame.persist()
        try:
            if stage_on == "driver":
                # Steps 2 and 3
                batch = replace(parsed, batch_id=batch_id)
                messages = [
                    _collect_and_stage(replace(batch, output=o), batch_id, derive(frame))[0]
                    for o, derive in derived.items()
                ]
                message, schema = _collect_and_stage(batch, batch_id, frame)
                messages.append(message)
                commit_batch(batch, messages, batch_id, schema, faults=process_faults())
                return
            # Step 2
            for output, derive in derived.items():
                derive(frame).write.format("onceflow-2pc").options(**fixed).options(
                    batchId=str(batch_id), output=output, stageOnly="true"
                ).mode("append").save()
            # Step 3
            frame.write.format("onceflow-2pc").options(**fixed).option("batchId", str(batch_id)).mode("append").save()
        finally:
            if derived:
                frame.unpersist()

    return write_batch


def _collect_and_stage(options: SinkOptions, batch_id: int, frame: DataFrame) -> tuple[StagedFileMessage, pa.Schema]:
    """The driver's staging of output ``options.output`` of micro-batch ``batch_id``: its rows collected
    as Arrow, staged as one file; with the output's Arrow schema. An unsupported column type fails
    first, naming the column."""
    schema = output_arrow_schema(options.output, frame.schema)
    return stage_driver_output(options, batch_id, frame.toArrow()), schema
