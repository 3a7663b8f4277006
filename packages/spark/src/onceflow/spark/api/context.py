"""What a job function receives: the session, the source, its parameters, and onceflow's building blocks."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention

from onceflow.contract import DEAD_LETTERS_OUTPUT
from onceflow.spark.job.dead_letters import DEAD_LETTER_SCHEMA, DeadLetterPublisher, DeadLetterSink, StagedDeadLetters
from onceflow.spark.job.decode import access_event_decoder, decoded_schema_ddl
from onceflow.spark.job.end_of_input import END_OF_INPUT_COLUMN, watermark_until_end_of_input
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.job.source import decoded_source_frame, source_frame
from onceflow.spark.source.batch import BATCH_WATERMARK_COLUMN


@dataclass
class JobContext:
    """A job's view of onceflow. Everything here is public API.

    - :attr:`spark`, :attr:`params` (``[params]`` of job.toml), :attr:`job` (its name);
    - :meth:`source`: the read_committed ``onceflow-kafka`` source of the configured topic, with
      exact offset ranges and an ``end_of_input`` column;
    - :meth:`access_events`: AccessEvent values decoded, undecodable ones as dead letters (the side
      output ``dead_letters``, committed with the batch when the job binds it);
    - :meth:`until_end_of_input`: a watermark that closes every window at the end of a bounded input.
    """

    spark: SparkSession
    settings: SparkJobSettings
    #: Side outputs the job's steps stage, with their schemas (filled in as the job uses them).
    side_outputs: dict[str, pa.Schema] = field(default_factory=dict)

    @property
    def job(self) -> str:
        return self.settings.job

    @property
    def params(self) -> Mapping[str, Any]:
        return self.settings.params

    def source(self) -> DataFrame:
        """The raw records of the source topic: key, value, topic, partition, offset, timestamp, end_of_input."""
        return source_frame(self.spark, self.settings)

    def access_events(
        self, fields: Sequence[str] = ("event_time_ms", "ip"), records: DataFrame | None = None
    ) -> DataFrame:
        """Decode AccessEvent values into ``fields`` (``event_time_ms`` becomes the timestamp ``event_time``).

        Fields: event_time_ms, ip, method, path, status, bytes, user_agent. The end-of-input row
        passes with the end of time as its event time (use :meth:`until_end_of_input`).
        """
        decoded = self._decoded_source(fields) if records is None else None
        carried: list[str] = []
        if decoded is None:
            source = records if records is not None else self.source()
            # a replay's rows carry their micro-batch's watermark through the decoder (onceflow.spark.replay)
            carried = [c for c in (BATCH_WATERMARK_COLUMN,) if c in source.columns]
            needed = source.select("key", "value", "topic", "partition", "offset", END_OF_INPUT_COLUMN, *carried)
            decoded = needed.mapInArrow(
                access_event_decoder(fields, self._dead_letter_sink(), carried), decoded_schema_ddl(fields, carried)
            )
        if "event_time_ms" in fields:
            columns = [
                F.timestamp_millis("event_time_ms").alias("event_time") if f == "event_time_ms" else F.col(f)
                for f in fields
            ]
            decoded = decoded.select(*columns, *carried)
        return decoded

    def until_end_of_input(self, events: DataFrame, event_time: str, delay: str) -> DataFrame:
        """``events.withWatermark(event_time, delay)``, closing every window at the end of the input."""
        return watermark_until_end_of_input(events, event_time, delay)

    def _decoded_source(self, fields: Sequence[str]) -> DataFrame | None:
        """The source decoding AccessEvents as it reads them (one Python pass per record instead of two), or
        None where the records come from elsewhere (a replay decodes its batch read with ``mapInArrow``)."""
        settings = self.settings
        dead_letters: dict[str, str]
        if settings.guarantee == "exactly-once" and DEAD_LETTERS_OUTPUT in settings.outputs:
            self.side_outputs[DEAD_LETTERS_OUTPUT] = DEAD_LETTER_SCHEMA
            dead_letters = {"staging_root": settings.staging_root, "job": settings.job}
        else:
            dead_letters = {"topic": settings.dead_letter_topic}
        return decoded_source_frame(self.spark, settings, fields, dead_letters)

    def _dead_letter_sink(self) -> Callable[[], DeadLetterSink]:
        settings = self.settings
        if settings.guarantee == "exactly-once" and DEAD_LETTERS_OUTPUT in settings.outputs:
            self.side_outputs[DEAD_LETTERS_OUTPUT] = DEAD_LETTER_SCHEMA
            staging_root, job = settings.staging_root, settings.job
            return lambda: StagedDeadLetters(staging_root, job)
        config, topic = settings.kafka.client_config(), settings.dead_letter_topic
        return lambda: DeadLetterPublisher(config, topic)
