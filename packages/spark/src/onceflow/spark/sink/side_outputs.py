"""Side outputs: rows that an earlier step of the query stages for a micro-batch (Flink's side outputs).

A step that is not the sink, such as the decoder that turns undecodable source records into dead
letters, stages its side rows under the micro-batch's staging directory with a *deterministic*
name: one file per (side output, input partition). A retried task or a replayed micro-batch reads
the same offsets, so it rewrites the same file with the same rows instead of adding another. The
driver lists the files when it commits the batch, and they commit in the same transaction as the
query's results: exactly once, like every other output.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
from pyspark import TaskContext

from onceflow.contract.staging import StagedFile, StagingWriter, describe_staged, list_staged
from onceflow.spark.sink.writer_context import current_batch_id

PREFIX = "side-"


def side_file_name(output: str, partition: int) -> str:
    return f"{PREFIX}{output}-part-{partition:05d}"


def stage_side_output(
    staging_root: str,
    job: str,
    output: str,
    schema: pa.Schema,
    batches: Iterable[pa.RecordBatch],
    *,
    batch_id: int | None = None,
) -> StagedFile | None:
    """Stage this task's rows of side output ``output`` (nothing when there are none).

    They go under the running micro-batch, or under ``batch_id`` when given (a batch query: the replay).
    """
    rows = [b for b in batches if b.num_rows]
    if not rows:
        return None
    context = TaskContext.get()
    if context is None:
        raise RuntimeError("side outputs are staged inside Spark tasks only")
    writer = StagingWriter(staging_root, job, current_batch_id() if batch_id is None else batch_id)
    return writer.write_batches(side_file_name(output, context.partitionId()), schema, rows, output=output)


def side_output_files(staging_root: str, job: str, batch: int, outputs: Iterable[str]) -> list[StagedFile]:
    """Every side-output file staged for ``<job>:<batch>`` of ``outputs``, described (count and sha256)."""
    wanted = set(outputs)
    found: list[StagedFile] = []
    if not wanted:
        return found
    for name, uri in list_staged(staging_root, job, batch, prefix=PREFIX):
        output = name.removeprefix(PREFIX).rsplit("-part-", 1)[0]
        if output in wanted:
            found.append(describe_staged(uri, output))
    return found
