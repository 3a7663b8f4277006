"""What the driver asks the broker about the source topic: partitions, offset bounds, lag commits."""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from onceflow.core.logging import get_logger
from onceflow.spark.source.options import SourceOptions

_log = get_logger(__name__)

#: Bound of one metadata or ListOffsets request.
REQUEST_TIMEOUT_S = 30.0


class TopicProbe:
    """Partition list and offset bounds of the source topic, as seen at the source's isolation level.

    ``end_offset`` is the last stable offset (LSO) under ``read_committed``: every offset below it
    belongs to a decided transaction (or none), so a range ending there reads the same records on
    every replay. Under ``read_uncommitted`` it is the high watermark.
    """

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._consumer = Consumer(
            options.client_config(
                **{
                    "group.id": f"onceflow-spark-probe-{uuid.uuid4().hex[:12]}",
                    "enable.auto.commit": False,
                    "isolation.level": options.isolation_level,
                }
            )
        )
        self._committer: Consumer | None = None

    def partitions(self) -> list[int]:
        """The topic's partitions; fails when the topic does not exist."""
        topic = self._options.topic
        metadata = self._consumer.list_topics(topic, timeout=REQUEST_TIMEOUT_S)
        info = metadata.topics.get(topic)
        if info is None or info.error is not None:
            raise KafkaException(info.error if info is not None else KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
        return sorted(info.partitions)

    def bounds(self, partition: int) -> tuple[int, int]:
        """``(earliest, end)`` of one partition; ``end`` is the LSO under read_committed."""
        low, high = self._consumer.get_watermark_offsets(
            TopicPartition(self._options.topic, partition), timeout=REQUEST_TIMEOUT_S, cached=False
        )
        return int(low), int(high)

    def all_bounds(self) -> dict[int, tuple[int, int]]:
        return {p: self.bounds(p) for p in self.partitions()}

    def commit_for_monitoring(self, offsets: dict[int, int]) -> None:
        """Commit ``offsets`` to the monitoring consumer group so that lag tools see progress.

        This copy is informational: Spark's offset log is the truth. Failures are logged, never raised.
        """
        try:
            if self._committer is None:
                self._committer = Consumer(
                    self._options.client_config(
                        **{"group.id": self._options.monitoring_group, "enable.auto.commit": False}
                    )
                )
            self._committer.commit(
                offsets=[TopicPartition(self._options.topic, p, o) for p, o in sorted(offsets.items())],
                asynchronous=False,
            )
        except KafkaException as exc:
            _log.warning(
                "source.monitoring_commit_failed", group=self._options.monitoring_group, error=str(exc.args[0])
            )

    def close(self) -> None:
        for consumer in (self._consumer, self._committer):
            if consumer is not None:
                consumer.close()
