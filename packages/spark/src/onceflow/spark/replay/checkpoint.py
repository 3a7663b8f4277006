"""What a streaming query's checkpoint says it read: the offsets and watermark of every micro-batch.

Spark writes ``offsets/<batch>`` before it runs a micro-batch (``v1``, then the batch's metadata
with ``batchWatermarkMs``, then one line per source: for ``onceflow-kafka``
``{"<topic>": {"<partition>": <end offset>}}``) and ``commits/<batch>`` after the sink committed.
The query's first offsets are in ``onceflow/initial-offsets.json`` (the source keeps them there).
Spark keeps the last ``spark.sql.streaming.minBatchesToRetain`` (100) entries of each log: older
micro-batches are merged into the first retained one, whose watermark is then not theirs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from onceflow.contract.staging import StagingError, default_store, parse_staging_uri
from onceflow.core.errors import OnceflowError
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.job.source import initial_offsets_path
from onceflow.spark.source.batch import BatchBoundary
from onceflow.spark.source.initial import load_initial_offsets
from onceflow.spark.source.offsets import PartitionOffsets, from_spark


class CheckpointUnreadable(OnceflowError):  # noqa: N818 - says what is wrong
    """The checkpoint does not hold what a replay needs; names the checkpoint and what is missing."""

    def __init__(self, location: str, problem: str) -> None:
        super().__init__(f"checkpoint {location}: {problem}")


@dataclass(frozen=True)
class ReadPlan:
    """What micro-batches ``first_batch..last_batch`` read: from ``start`` to each boundary in turn.

    ``merged_batches`` > 0 when Spark had purged the log of the first micro-batches: the first
    boundary then stands for all of them, with the first retained batch's watermark.
    """

    topic: str
    start: PartitionOffsets
    boundaries: list[BatchBoundary]
    first_batch: int
    last_batch: int
    merged_batches: int = 0


class CheckpointLog:
    """The offset and commit logs under ``settings.checkpoint_location`` (a local directory, or
    ``s3://``/``s3a://`` read through the staging store)."""

    def __init__(self, settings: SparkJobSettings) -> None:
        self.location = settings.checkpoint_location.rstrip("/")
        self.topic = settings.source.topic
        self._initial_path = initial_offsets_path(settings)
        self._store = default_store()
        self._root = parse_staging_uri(self.location)

    def _batches(self, log: str) -> list[int]:
        try:
            names = self._store.list_names(self._root.child(log))
        except StagingError as exc:
            raise CheckpointUnreadable(self.location, f"cannot list {log}/: {exc}") from None
        return sorted(int(name) for name in names if name.isdigit())

    def committed_batches(self) -> list[int]:
        """The micro-batches whose commit Spark logged, in order."""
        return self._batches("commits")

    def planned_batches(self) -> list[int]:
        """The micro-batches Spark planned (wrote offsets for), in order."""
        return self._batches("offsets")

    def boundary(self, batch: int) -> BatchBoundary:
        """Where micro-batch ``batch`` ended and its watermark, from ``offsets/<batch>``."""
        try:
            lines = self._store.read(self._root.child("offsets", str(batch))).decode("utf-8").splitlines()
            metadata = json.loads(lines[1])
            end = from_spark(self.topic, json.loads(lines[2]))
        except (StagingError, IndexError, ValueError) as exc:
            raise CheckpointUnreadable(
                self.location, f"offsets/{batch} is not a Spark offset log entry: {exc}"
            ) from None
        if not end:
            raise CheckpointUnreadable(self.location, f"offsets/{batch} has no offsets of topic {self.topic!r}")
        return BatchBoundary(end, int(metadata.get("batchWatermarkMs", 0)))

    def plan(self, through_batch: int) -> ReadPlan:
        """The reads of micro-batches ``0..through_batch``.

        Steps:
            1. The start: the query's initial offsets (``onceflow/initial-offsets.json``).
            2. Every retained ``offsets/<n>`` up to ``through_batch``, in order; each must exist
               from the first retained one on (a gap means the log was damaged).
        """
        # Step 1
        start = load_initial_offsets(self._initial_path)
        if start is None:
            raise CheckpointUnreadable(self.location, "onceflow/initial-offsets.json is missing (no batch ever ran)")
        # Step 2
        planned = [b for b in self.planned_batches() if b <= through_batch]
        if not planned or planned[-1] != through_batch:
            raise CheckpointUnreadable(self.location, f"offsets/{through_batch} is missing")
        expected = list(range(planned[0], through_batch + 1))
        if planned != expected:
            missing = sorted(set(expected) - set(planned))
            raise CheckpointUnreadable(self.location, f"offsets of batch(es) {missing[:5]} are missing")
        return ReadPlan(
            topic=self.topic,
            start=start,
            boundaries=[self.boundary(b) for b in planned],
            first_batch=planned[0],
            last_batch=through_batch,
            merged_batches=planned[0],
        )
