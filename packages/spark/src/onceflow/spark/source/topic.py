"""What the driver asks the broker about the source topic: partitions, offset bounds, lag commits."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from onceflow.core.kafka import RetryPolicy, reader_config, retry_transient, watermark_offsets
from onceflow.core.logging import get_logger
from onceflow.spark.source.options import SourceOptions

_log = get_logger(__name__)

#: Bound of one metadata or ListOffsets request.
REQUEST_TIMEOUT_S = 30.0
#: How long the driver's questions are retried through transient errors (a broker down, a leader
#: moving) before ``latestOffset`` fails the query: Kafka's default.api.timeout.ms.
RETRY = RetryPolicy(timeout_s=60.0)


class TopicProbe:
    """Partition list and offset bounds of the source topic, as seen at the source's isolation level.

    ``end_offset`` is the last stable offset (LSO) under ``read_committed``: every offset below it
    belongs to a decided transaction (or none), so a range ending there reads the same records on
    every replay. Under ``read_uncommitted`` it is the high watermark.

    A broker that dies, a partition without a leader for a moment (``_UNKNOWN_PARTITION``), a broker
    handle librdkafka destroys (``_DESTROY_BROKER``) are retried for up to :data:`RETRY`'s timeout,
    as Spark's own Kafka source retries its offset fetches, instead of failing the query.
    """

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        config = reader_config(
            options.client_config(), group_prefix="onceflow-spark-probe-", isolation_level=options.isolation_level
        )
        self._consumer = Consumer(config)
        self._committer: Consumer | None = None

    def partitions(self) -> list[int]:
        """The topic's partitions; fails when the topic does not exist."""
        topic = self._options.topic
        consumer = self._consumer
        metadata = retry_transient(
            lambda: consumer.list_topics(topic, timeout=REQUEST_TIMEOUT_S), what=f"metadata of {topic}", policy=RETRY
        )
        info = metadata.topics.get(topic)
        if info is None or info.error is not None:
            raise KafkaException(info.error if info is not None else KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))
        return sorted(info.partitions)

    def bounds(self, partition: int) -> tuple[int, int]:
        """``(earliest, end)`` of one partition; ``end`` is the LSO under read_committed."""
        return watermark_offsets(self._consumer, TopicPartition(self._options.topic, partition), policy=RETRY)

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


def wait_for_topic(
    client_config: dict[str, object], topic: str, stopping: Callable[[], bool], *, log_every_s: float = 10.0
) -> bool:
    """Wait until ``topic`` exists (services may start in any order); False when asked to stop first.

    The wait is not bounded: a job whose source topic does not exist yet has nothing to do, and
    spending its restarts on UNKNOWN_TOPIC_OR_PART would only end it. It logs every ``log_every_s``.
    """
    consumer = Consumer({**client_config, "group.id": f"onceflow-spark-wait-{uuid.uuid4().hex[:12]}"})
    started = last_log = time.monotonic()
    try:
        while not stopping():
            try:
                info = consumer.list_topics(topic, timeout=REQUEST_TIMEOUT_S).topics.get(topic)
            except KafkaException as exc:
                info, error = None, str(exc.args[0])
            else:
                error = str(info.error) if info is not None and info.error is not None else ""
            if info is not None and info.error is None and info.partitions:
                if time.monotonic() - started > 1:
                    _log.info("source.topic_ready", topic=topic, waited_s=round(time.monotonic() - started, 1))
                return True
            if time.monotonic() - last_log >= log_every_s or last_log == started:
                last_log = time.monotonic()
                _log.warning("source.waiting_for_topic", topic=topic, waited_s=round(last_log - started, 1),
                             error=error or "does not exist")  # fmt: skip
            time.sleep(0.5)
        return False
    finally:
        consumer.close()
