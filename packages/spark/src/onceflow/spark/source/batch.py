"""``spark.read.format("onceflow-kafka")``: a bounded read of exact offset ranges, cut at micro-batch boundaries.

The replay audit re-runs a streaming job as a batch query over what its micro-batches read. The
ranges come as the option ``batches``: a JSON list of ``{"end": {"<partition>": <offset>},
"watermark_ms": <ms>}``, one per micro-batch in order, after ``startingOffsets`` (exact JSON
offsets). Each micro-batch's range of each partition is one Spark task, read exactly as the stream
read it (:func:`~onceflow.spark.source.ranges.read_range`: read_committed, an end-of-input marker
counts only when the batch covers it). Every row carries :data:`BATCH_WATERMARK_COLUMN`, the
event-time watermark of the micro-batch that read it, so a replay can tell which events the stream
saw behind its watermark.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import LongType, StructField, StructType

from onceflow.core.errors import InvalidConfig
from onceflow.spark.source import offsets as off
from onceflow.spark.source.options import SourceOptions
from onceflow.spark.source.ranges import OffsetRange, read_range
from onceflow.spark.source.schema import SOURCE_SCHEMA

#: The option listing the micro-batches to read.
BATCHES_OPTION = "batches"
#: The column with the watermark (epoch ms) of the micro-batch that read the row.
BATCH_WATERMARK_COLUMN = "batch_watermark_ms"

BATCH_SCHEMA = StructType([*SOURCE_SCHEMA.fields, StructField(BATCH_WATERMARK_COLUMN, LongType(), False)])


@dataclass(frozen=True)
class BatchBoundary:
    """Where one micro-batch ended, and the watermark it ran with."""

    end: dict[int, int]
    watermark_ms: int


def batches_option(boundaries: Sequence[BatchBoundary]) -> str:
    """The :data:`BATCHES_OPTION` value for ``boundaries``."""
    return json.dumps(
        [{"end": {str(p): o for p, o in sorted(b.end.items())}, "watermark_ms": b.watermark_ms} for b in boundaries]
    )


def parse_batches_option(value: str) -> list[BatchBoundary]:
    """The boundaries in :data:`BATCHES_OPTION`; InvalidConfig naming the option when malformed."""
    try:
        doc = json.loads(value)
        boundaries = [
            BatchBoundary({int(p): int(o) for p, o in item["end"].items()}, int(item["watermark_ms"])) for item in doc
        ]
    except (json.JSONDecodeError, TypeError, KeyError, ValueError, AttributeError) as exc:
        raise InvalidConfig(
            BATCHES_OPTION, f'expected [{{"end": {{"0": 42}}, "watermark_ms": 0}}, ...]: {exc}'
        ) from None
    return boundaries


class ReplayRange(OffsetRange):
    """One micro-batch's range of one partition, with the micro-batch's watermark."""

    def __init__(
        self, topic: str, partition: int, start: int, end: int, batch_end: Mapping[int, int], *, watermark_ms: int
    ) -> None:
        super().__init__(topic, partition, start, end, batch_end)
        self.watermark_ms = watermark_ms


def plan_ranges(topic: str, start: Mapping[int, int], boundaries: Sequence[BatchBoundary]) -> list[ReplayRange]:
    """The non-empty ranges of every partition in every micro-batch, in batch order.

    A partition that joins later starts at its first listed offset (as the stream reads it).
    """
    ranges: list[ReplayRange] = []
    position = dict(start)
    for boundary in boundaries:
        for partition in sorted(boundary.end):
            begin = position.get(partition, boundary.end[partition])
            if begin < boundary.end[partition]:
                ranges.append(
                    ReplayRange(
                        topic,
                        partition,
                        begin,
                        boundary.end[partition],
                        boundary.end,
                        watermark_ms=boundary.watermark_ms,
                    )
                )
            position[partition] = max(begin, boundary.end[partition])
    return ranges


class KafkaBatchReader(DataSourceReader):
    """Reads the planned ranges; each Arrow batch gets the micro-batch's watermark column."""

    def __init__(self, options: SourceOptions, ranges: Sequence[ReplayRange]) -> None:
        self.options = options
        self.ranges = list(ranges)

    def partitions(self) -> Sequence[InputPartition]:
        return self.ranges

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, ReplayRange):
            raise TypeError(f"expected a ReplayRange, got {type(partition).__name__}")
        schema: pa.Schema | None = None
        for batch in read_range(self.options, partition):
            if schema is None:  # what Spark checks a batch read against: BATCH_SCHEMA's nullability too
                fields = [f.with_nullable(SOURCE_SCHEMA[f.name].nullable) for f in batch.schema]
                schema = pa.schema([*fields, pa.field(BATCH_WATERMARK_COLUMN, pa.int64(), nullable=False)])
            watermark = pa.array([partition.watermark_ms] * batch.num_rows, pa.int64())
            yield pa.RecordBatch.from_arrays([*batch.columns, watermark], schema=schema)


def batch_reader(options: SourceOptions, raw: Mapping[str, Any]) -> KafkaBatchReader:
    """The reader for ``spark.read``: exact ``startingOffsets`` and the ``batches`` option are required."""
    value = raw.get(BATCHES_OPTION)
    if value is None:
        raise InvalidConfig(BATCHES_OPTION, "a bounded read of onceflow-kafka needs the micro-batches to read")
    start = off.parse_starting_offsets(options.starting_offsets, options.topic)
    if start is None or any(o < 0 for o in start.values()):
        raise InvalidConfig("startingOffsets", "a bounded read needs exact offsets, not earliest/latest")
    return KafkaBatchReader(options, plan_ranges(options.topic, start, parse_batches_option(str(value))))
