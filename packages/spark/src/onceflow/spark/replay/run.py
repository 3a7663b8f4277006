"""Re-run a streaming job's query as one batch query over what its micro-batches read."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from onceflow.contract import DEFAULT_OUTPUT
from onceflow.contract.staging import delete_batch, describe_staged, list_staged, read_staged
from onceflow.core.errors import InvalidConfig
from onceflow.core.logging import get_logger
from onceflow.spark.api.entrypoint import load_entrypoint
from onceflow.spark.api.shipping import ship_job_file
from onceflow.spark.exceptions import JobDefinitionError
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.replay.checkpoint import ReadPlan
from onceflow.spark.replay.context import REPLAY_BATCH, ReplayContext
from onceflow.spark.sink.datasource import output_arrow_schema
from onceflow.spark.sink.side_outputs import PREFIX as SIDE_PREFIX
from onceflow.spark.source.batch import BATCH_WATERMARK_COLUMN

_log = get_logger(__name__)

#: Rows behind the watermark listed in a report.
EXAMPLES = 5


@dataclass(frozen=True)
class ReplayedOutput:
    """One output's rows as the batch query computed them."""

    name: str
    schema: pa.Schema
    rows: list[dict[str, Any]]
    #: ``main`` (the streaming output), ``derived`` (a function of its micro-batches) or ``side``.
    role: str = "main"


@dataclass
class Replay:
    """What the replay of micro-batches ``first..last`` of a job computed."""

    job: str
    plan: ReadPlan
    outputs: dict[str, ReplayedOutput] = field(default_factory=dict)
    #: Events at or behind their micro-batch's watermark; None when the job sets no onceflow watermark.
    behind_watermark: int | None = None
    behind_examples: list[dict[str, Any]] = field(default_factory=list)


def _rows(frame: DataFrame) -> tuple[pa.Schema, list[dict[str, Any]]]:
    if BATCH_WATERMARK_COLUMN in frame.columns:
        frame = frame.drop(BATCH_WATERMARK_COLUMN)
    table = frame.toArrow()
    return table.schema, table.to_pylist()


def replay_job(spark: SparkSession, settings: SparkJobSettings, plan: ReadPlan) -> Replay:
    """Run the job's function on a bounded read of ``plan`` and collect every output.

    Steps:
        1. Build a :class:`ReplayContext` and run the job's function: its ``source()`` is now a batch
           read of the micro-batches' exact ranges.
        2. Collect the main output (cached: derived outputs are functions of it), then each derived
           output applied to the whole of it.
        3. Collect the side outputs the steps staged (the dead letters), then delete them.
        4. Count the events that were behind the watermark of their micro-batch.
    """
    # Step 1
    staging_job = f"{settings.job}.replay-{uuid.uuid4().hex[:12]}"
    context = ReplayContext(spark, settings, plan=plan, staging_job=staging_job)
    try:
        function = load_entrypoint(settings.entrypoint)
        ship_job_file(spark, settings.entrypoint)
        result = function(context)
    except (ValueError, InvalidConfig) as exc:
        raise JobDefinitionError(settings.job, str(exc)) from None
    values: Mapping[str, Any] = {DEFAULT_OUTPUT: result} if isinstance(result, DataFrame) else result
    frames = {name: value for name, value in values.items() if isinstance(value, DataFrame)}
    if len(frames) != 1:
        raise JobDefinitionError(settings.job, f"expected one DataFrame output, got {', '.join(frames) or 'none'}")
    ((main_name, main),) = frames.items()
    replay = Replay(settings.job, plan)
    # Step 2
    main = main.persist()
    try:
        schema, rows = _rows(main)
        replay.outputs[main_name] = ReplayedOutput(main_name, output_arrow_schema(main_name, main.schema), rows)
        _log.info("replay.output", job=settings.job, output=main_name, rows=len(rows), columns=len(schema))
        batch = main.drop(BATCH_WATERMARK_COLUMN) if BATCH_WATERMARK_COLUMN in main.columns else main
        for name, derive in values.items():
            if name == main_name:
                continue
            derived = derive(batch)
            _schema, rows = _rows(derived)
            replay.outputs[name] = ReplayedOutput(name, output_arrow_schema(name, derived.schema), rows, "derived")
            _log.info("replay.output", job=settings.job, output=name, rows=len(rows), role="derived")
        # Step 3
        for name, side_schema in context.side_outputs.items():
            tables = [
                read_staged(describe_staged(uri, name))
                for file, uri in list_staged(settings.staging_root, staging_job, REPLAY_BATCH, prefix=SIDE_PREFIX)
                if file.removeprefix(SIDE_PREFIX).rsplit("-part-", 1)[0] == name
            ]
            rows = [row for table in tables for row in table.to_pylist()]
            replay.outputs[name] = ReplayedOutput(name, side_schema, rows, "side")
            _log.info("replay.output", job=settings.job, output=name, rows=len(rows), role="side")
        # Step 4
        if context.behind_watermark:
            behind = context.behind_watermark[0]
            replay.behind_watermark = behind.rows.count()
            replay.behind_examples = [row.asDict() for row in behind.rows.limit(EXAMPLES).collect()]
    finally:
        main.unpersist()
        delete_batch(settings.staging_root, staging_job, REPLAY_BATCH)
    return replay
