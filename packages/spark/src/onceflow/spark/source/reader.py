"""The driver side of the ``onceflow-kafka`` source: offsets, admission control and planning."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows

from onceflow.core.logging import get_logger
from onceflow.spark.source import offsets as off
from onceflow.spark.source.initial import store_initial_offsets
from onceflow.spark.source.options import SourceOptions
from onceflow.spark.source.ranges import OffsetRange, read_range
from onceflow.spark.source.topic import TopicProbe
from onceflow.spark.worker_logging import ensure_worker_logging

_log = get_logger(__name__)


class KafkaStreamReader(DataSourceStreamReader):
    """Micro-batch reader of one Kafka topic with exactly-once replay.

    Guarantees:

    - a batch's ``end`` never passes the last stable offset (read_committed), so every record
      of the range belongs to a decided transaction and a replay reads the same records;
    - ``latestOffset(start, limit)`` admits at most ``limit.max_rows`` offsets (``maxOffsetsPerTrigger``),
      shared across partitions in proportion to their backlog;
    - partitions added to the topic join at their earliest offset;
    - a query restarted from its checkpoint runs one batch even when no record came since: see
      :meth:`latestOffset`;
    - ``commit(end)`` copies the offsets to a consumer group for lag monitoring only.
    """

    def __init__(self, options: SourceOptions, initial_offsets_path: str = "") -> None:
        self.options = options
        self.initial_offsets_path = initial_offsets_path
        self._probe: TopicProbe | None = None
        #: Whether this reader has answered latestOffset yet (one reader per query run, on the driver).
        self._planned = False
        #: Whether this run started without a checkpoint (initialOffset was asked).
        self._fresh = False

    # The reader is pickled into the read function Spark ships to executors; clients stay behind.
    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "initial_offsets_path": self.initial_offsets_path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.options = state["options"]
        self.initial_offsets_path = state["initial_offsets_path"]
        self._probe = None
        self._planned = self._fresh = False

    @property
    def probe(self) -> TopicProbe:
        if self._probe is None:
            ensure_worker_logging()
            self._probe = TopicProbe(self.options)
        return self._probe

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 - Spark's API
        self._fresh = True
        bounds = self.probe.all_bounds()
        wanted = off.parse_starting_offsets(self.options.starting_offsets, self.options.topic)
        resolved: off.PartitionOffsets = {}
        for partition, (earliest, end) in bounds.items():
            if wanted is None:
                resolved[partition] = earliest if self.options.starting_offsets == "earliest" else end
                continue
            value = wanted.get(partition, off.EARLIEST)
            resolved[partition] = earliest if value == off.EARLIEST else end if value == off.LATEST else value
        if self.initial_offsets_path:
            resolved = store_initial_offsets(self.initial_offsets_path, self.options.topic, resolved)
        _log.info("source.initial_offsets", topic=self.options.topic, offsets=resolved)
        return off.to_spark(self.options.topic, resolved)

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 - Spark's API
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:  # noqa: N802 - Spark's API
        """The end of the next batch: every partition's LSO, within ``limit``.

        The first answer of a query restarted from its checkpoint moves :data:`~off.RESTARTS` on when
        no record came since the last batch. Spark runs a batch without new data only when the
        previous batch's plan says the watermark moved, and a restarted query has no previous plan:
        without this, the windows that the last batch's watermark closed (the end of the input, say)
        would wait for a record that may never come. The batch it forces reads nothing and runs with
        the watermark Spark restored from its commit log, so it emits exactly those windows.
        """
        first, self._planned = not self._planned, True
        restarted = first and not self._fresh
        return off.with_extras(start, self._latest(start, limit), bump_restarts=restarted)

    def _latest(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = off.from_spark(self.options.topic, start)
        available: off.PartitionOffsets = {}
        for partition, (earliest, end) in self.probe.all_bounds().items():
            if partition not in begin:
                _log.info("source.partition_added", topic=self.options.topic, partition=partition, start=earliest)
                available[partition] = earliest  # joins with an empty range; read from the next batch on
            else:
                available[partition] = max(begin[partition], end)
        for partition, offset in begin.items():
            available.setdefault(partition, offset)
        if isinstance(limit, ReadMaxRows):
            available = off.rate_limit(begin, available, int(limit.max_rows))
        elif isinstance(limit, ReadMinRows):
            backlog = sum(available[p] - begin.get(p, available[p]) for p in available)
            if backlog < int(limit.min_rows):
                return off.to_spark(self.options.topic, {**available, **begin})
        return off.to_spark(self.options.topic, available)

    def reportLatestOffset(self) -> dict[str, Any] | None:  # noqa: N802 - Spark's API
        return off.to_spark(self.options.topic, {p: end for p, (_, end) in self.probe.all_bounds().items()})

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = off.from_spark(self.options.topic, start)
        finish = off.from_spark(self.options.topic, end)
        return [
            OffsetRange(self.options.topic, p, begin.get(p, finish[p]), finish[p], finish)
            for p in sorted(finish)
            if begin.get(p, finish[p]) < finish[p]
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            raise TypeError(f"expected an OffsetRange, got {type(partition).__name__}")
        return read_range(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        self.probe.commit_for_monitoring(off.from_spark(self.options.topic, end))

    def stop(self) -> None:
        if self._probe is not None:
            self._probe.close()
            self._probe = None
