"""The writers of the ``onceflow-2pc`` sink: thin adapters of Spark's writer APIs over
:mod:`onceflow.spark.sink.transaction` (stage on executors, two-phase commit from the driver)."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from onceflow.core.faults import FaultInjector, installed_faults
from onceflow.spark.sink.options import SinkOptions
from onceflow.spark.sink.transaction import abort_batch, commit_batch, stage_derived_output, stage_task_output
from onceflow.spark.sink.writer_context import current_batch_id
from onceflow.spark.worker_logging import ensure_worker_logging


def process_faults() -> FaultInjector:
    """This process's fault injector for the commits (:func:`~onceflow.core.faults.installed_faults`
    of ``spark-sink``): looked up once per process, as a Python worker runs many commits; none in
    production."""
    ensure_worker_logging()  # the lookup logs an installed injector
    return installed_faults("spark-sink")


class TwoPhaseCommitWriter(DataSourceStreamArrowWriter):
    """The streaming writer (append mode): one transaction ``<job>:<batchId>`` per micro-batch.

    Each task stages the Arrow batches Spark hands it as they are (one Arrow IPC file per task
    attempt, none for a task without rows).

    Guarantees: a micro-batch's rows reach every sink of the job exactly once, also when the batch is
    re-run after a crash (the coordinator answers COMMITTED for a committed batch), and a driver that
    another driver fenced fails instead of writing.
    """

    def __init__(self, options: SinkOptions, schema: pa.Schema) -> None:
        self.options = options
        self.schema = schema

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return stage_task_output(self.options, current_batch_id(), iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - Spark's API
        commit_batch(self.options, messages, batchId, self.schema, faults=process_faults())

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - Spark's API
        abort_batch(self.options, messages, batchId)


class TwoPhaseCommitBatchWriter(DataSourceArrowWriter):
    """The batch writer, for ``foreachBatch`` (update mode: Python streaming sinks only take append).

    The micro-batch id comes from the ``batchId`` option (``foreachBatch``'s ``batch_id``), so a
    replayed micro-batch is the same transaction, with the same guarantees as the streaming writer.
    With ``stageOnly`` (a derived output) its commit lists the staged files in a manifest instead,
    and the main output's commit takes them into the batch's transaction.
    """

    def __init__(self, options: SinkOptions, schema: pa.Schema) -> None:
        if options.batch_id is None:
            raise ValueError("batch writes of the onceflow-2pc sink need the batchId option")
        self.options = options
        self.schema = schema
        self.batch = options.batch_id

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return stage_task_output(self.options, self.batch, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.stage_only:
            stage_derived_output(self.options, messages, self.batch)
        else:
            commit_batch(self.options, messages, self.batch, self.schema, faults=process_faults())

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if not self.options.stage_only:  # a derived output's failure fails the whole batch, aborted there
            abort_batch(self.options, messages, self.batch)
