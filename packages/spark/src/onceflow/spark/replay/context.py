"""The job context of a replay: the same job function, over a bounded read of what the stream read."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention

from onceflow.contract import DEAD_LETTERS_OUTPUT
from onceflow.core.end_of_input import END_OF_INPUT_TIME_MS
from onceflow.spark.api.context import JobContext
from onceflow.spark.job.dead_letters import DEAD_LETTER_SCHEMA, DeadLetter, DeadLetterSink, StagedDeadLetters
from onceflow.spark.job.source import source_options
from onceflow.spark.replay.checkpoint import ReadPlan
from onceflow.spark.source.batch import BATCH_WATERMARK_COLUMN, BATCHES_OPTION, batches_option
from onceflow.spark.source.offsets import to_spark

#: The batch id the replay's dead letters are staged under (in the replay's own staging job).
REPLAY_BATCH = 0


class _Discarded(DeadLetterSink):
    """A replay never publishes: dead letters no output holds are dropped."""

    def add(self, letters: Sequence[DeadLetter]) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class BehindWatermark:
    """Rows that reached the job at or behind the watermark of the micro-batch that read them."""

    event_time: str
    rows: DataFrame


@dataclass
class ReplayContext(JobContext):
    """A :class:`JobContext` whose source is a batch read of the checkpoint's micro-batches.

    - :meth:`source` reads the exact ranges of every micro-batch up to the plan's last one, each row
      with the watermark of its micro-batch;
    - :meth:`until_end_of_input` keeps every event (a batch query has no watermark) and records the
      events at or behind their micro-batch's watermark: a stateful step of the stream may have
      dropped them as too late;
    - dead letters are staged under ``staging_job`` (batch :data:`REPLAY_BATCH`) to be compared too.
    """

    plan: ReadPlan | None = None
    staging_job: str = ""
    behind_watermark: list[BehindWatermark] = field(default_factory=list)

    def source(self) -> DataFrame:
        plan = self.plan
        assert plan is not None, "a replay context needs the checkpoint's read plan"
        options = source_options(self.settings)
        options.pop("maxOffsetsPerTrigger", None)
        options["startingOffsets"] = json.dumps(to_spark(plan.topic, plan.start))
        options[BATCHES_OPTION] = batches_option(plan.boundaries)
        return self.spark.read.format("onceflow-kafka").options(**options).load()

    def _decoded_source(self, fields: Sequence[str]) -> DataFrame | None:
        return None  # the batch read of source() is decoded with mapInArrow, each row with its batch's watermark

    def until_end_of_input(self, events: DataFrame, event_time: str, delay: str) -> DataFrame:
        end = F.col(event_time) < F.timestamp_millis(F.lit(END_OF_INPUT_TIME_MS))
        if BATCH_WATERMARK_COLUMN in events.columns:
            behind = F.col(event_time) <= F.timestamp_millis(F.col(BATCH_WATERMARK_COLUMN))
            self.behind_watermark.append(BehindWatermark(event_time, events.where(end & behind)))
            events = events.drop(BATCH_WATERMARK_COLUMN)
        return events.where(end)

    def _dead_letter_sink(self) -> Callable[[], DeadLetterSink]:
        settings = self.settings
        if DEAD_LETTERS_OUTPUT not in settings.outputs:
            return _Discarded  # the stream published them outside any transaction: nothing to compare
        self.side_outputs[DEAD_LETTERS_OUTPUT] = DEAD_LETTER_SCHEMA
        staging_root, job = settings.staging_root, self.staging_job
        return lambda: StagedDeadLetters(staging_root, job, batch_id=REPLAY_BATCH)
