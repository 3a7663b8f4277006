"""A compacted Kafka topic used as a replicated log of keyed state (after Kafka Connect's ``KafkaBasedLog``).

"Read to the end" means: take the high watermark of every partition *now*, then consume until the
position passes it. With ``read_committed`` this waits for every transaction that was open at that
moment to finish, so a reader never misses a record committed before it started reading (the last
stable offset alone would stop short of it while another producer's transaction is open).

Transient errors (a broker down, a leader or coordinator moving) are retried the way Kafka Connect's
``KafkaBasedLog`` and ``TopicAdmin`` retry them (:func:`onceflow.core.kafka.retry_transient`); the
follower thread treats a consumer's transient errors as informational, as librdkafka intends, and
keeps reading.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from onceflow.core.kafka import (
    DEFAULT_REPLICATION,
    Replication,
    RetryPolicy,
    TopicSpec,
    ensure_topics,
    is_transient,
    retry_transient,
    watermark_offsets,
)
from onceflow.core.logging import get_logger

RecordHandler = Callable[[bytes | None, bytes | None], None]
#: Hears of a record of an internal topic that could not be decoded and was skipped: (topic, key, reason).
SkippedRecordListener = Callable[[str, str, str], None]
_log = get_logger(__name__)


def skip_record(topic: str, key: bytes, reason: str, listener: SkippedRecordListener | None) -> None:
    """Report a record a store cannot decode: a ``storage.record_skipped`` line naming the topic, the
    key (escaped, cut to 200 bytes) and the reason, then ``listener``. The store goes on without it."""
    shown = key[:200].decode("utf-8", "backslashreplace")
    _log.warning("storage.record_skipped", topic=topic, key=shown, reason=reason)
    if listener is not None:
        listener(topic, shown, reason)


def ensure_topic(
    client_config: Mapping[str, Any],
    topic: str,
    partitions: int,
    config: Mapping[str, str],
    timeout: float = 30,
    *,
    replication: Replication = DEFAULT_REPLICATION,
) -> None:
    """Create ``topic`` with ``replication`` unless it exists (an existing topic is left as it is)."""
    ensure_topics(client_config, [TopicSpec(topic, partitions, config)], replication=replication, timeout=timeout)


def _consumer(client_config: Mapping[str, Any], isolation_level: str) -> Consumer:
    return Consumer(
        {
            **client_config,
            "group.id": f"onceflow-log-reader-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": isolation_level,
            "enable.partition.eof": True,
        }
    )


def end_offsets(client_config: Mapping[str, Any], topic: str, timeout: float = 30) -> dict[int, int]:
    """High watermark of every partition of ``topic`` (read_uncommitted: includes open transactions)."""
    consumer = _consumer(client_config, "read_uncommitted")
    try:
        return _end_offsets(consumer, topic, timeout)
    finally:
        consumer.close()


def _end_offsets(consumer: Consumer, topic: str, timeout: float) -> dict[int, int]:
    """The high watermarks, asked again while a partition's leader is away, being elected or has just
    moved (a topic just created, a broker down or restarting), until ``timeout``."""

    policy = RetryPolicy(timeout_s=timeout)

    def partitions() -> list[int]:
        metadata = consumer.list_topics(topic, timeout=timeout).topics[topic]
        if metadata.error is not None:
            raise KafkaException(metadata.error)
        return list(metadata.partitions)

    return {
        p: watermark_offsets(consumer, TopicPartition(topic, p), what=f"end offsets of {topic}", policy=policy)[1]
        for p in retry_transient(partitions, what=f"end offsets of {topic}", policy=policy)
    }


def position_after(msg: Message) -> tuple[int, int] | None:
    """``(partition, next position)`` a consumed message moves its partition to; None for a client error.

    A transient client error (a broker down, a leader moving) is informational: librdkafka recovers
    by itself, so it is logged and skipped. Any other error is raised.
    """
    err = msg.error()
    partition, offset = msg.partition(), msg.offset()
    if err is not None and err.code() != KafkaError._PARTITION_EOF:
        if is_transient(err):
            _log.debug("kafka_log.transient_error", topic=msg.topic(), error=err.name())
            return None
        raise KafkaException(err)
    if partition is None or offset is None:
        return None
    return partition, offset if err is not None else offset + 1


def read_to_end(
    client_config: Mapping[str, Any],
    topic: str,
    handle: RecordHandler,
    *,
    isolation_level: str = "read_committed",
    timeout: float = 120,
) -> None:
    """Call ``handle(key, value)`` for every record of ``topic``, in offset order per partition, up to
    the end as defined in the module docstring."""
    ends = end_offsets(client_config, topic)
    pending = {p for p, end in ends.items() if end > 0}
    if not pending:
        return
    consumer = _consumer(client_config, isolation_level)
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in pending])
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} to its end timed out after {timeout}s (partitions {pending})")
            for msg in consumer.consume(10_000, timeout=0.2):
                moved = position_after(msg)
                if moved is None:
                    continue
                partition, position = moved
                if msg.error() is None:
                    handle(msg.key(), msg.value())
                if position >= ends[partition]:
                    pending.discard(partition)
    finally:
        consumer.close()


class KafkaBasedLog:
    """Follows ``topic`` on a background thread, calling ``handle(key, value)`` for every record.

    ``start`` returns once everything already in the topic has been handled. ``send`` writes through
    an idempotent producer; ``read_to_end`` waits until every record written before the call has been
    handled, which gives read-your-writes across workers.
    """

    def __init__(
        self,
        client_config: Mapping[str, Any],
        topic: str,
        handle: RecordHandler,
        *,
        partitions: int = 1,
        topic_config: Mapping[str, str] | None = None,
        replication: Replication = DEFAULT_REPLICATION,
    ) -> None:
        self.topic = topic
        self._replication = replication
        self._client_config = dict(client_config)
        self._handle = handle
        self._partitions = partitions
        self._topic_config = dict(topic_config or {"cleanup.policy": "compact"})
        self._positions: dict[int, int] = {}
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._consumer: Consumer | None = None
        #: Queries end offsets from callers' threads (a consumer handle is not shared across threads).
        self._end_query: Consumer | None = None
        self._end_query_lock = threading.Lock()
        self._producer: Producer | None = None
        self._error: BaseException | None = None

    def start(self, timeout: float = 60) -> None:
        ensure_topic(
            self._client_config, self.topic, self._partitions, self._topic_config, replication=self._replication
        )
        self._producer = Producer({**self._client_config, "enable.idempotence": True, "linger.ms": 0})
        self._consumer = _consumer(self._client_config, "read_uncommitted")
        self._end_query = _consumer(self._client_config, "read_uncommitted")
        consumer = self._consumer
        metadata = retry_transient(
            lambda: consumer.list_topics(self.topic, timeout=30).topics[self.topic], what=f"metadata of {self.topic}"
        )
        self._positions = dict.fromkeys(metadata.partitions, 0)
        self._consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in metadata.partitions])
        self._thread = threading.Thread(target=self._run, name=f"kafka-log-{self.topic}", daemon=True)
        self._thread.start()
        self.read_to_end(timeout)

    def _run(self) -> None:
        assert self._consumer is not None
        try:
            while not self._stopping.is_set():
                for msg in self._consumer.consume(1000, timeout=0.1):
                    moved = position_after(msg)
                    if moved is None:
                        continue
                    partition, position = moved
                    if msg.error() is None:
                        self._handle(msg.key(), msg.value())
                    with self._cond:
                        self._positions[partition] = max(self._positions.get(partition, 0), position)
                        self._cond.notify_all()
        except BaseException as exc:
            _log.exception("kafka_log.failed", topic=self.topic)
            with self._cond:
                self._error = exc
                self._cond.notify_all()

    def read_to_end(self, timeout: float = 60) -> None:
        """Block until every record in the topic now has been handled."""
        assert self._end_query is not None
        with self._end_query_lock:
            ends = _end_offsets(self._end_query, self.topic, 30)
        deadline = time.monotonic() + timeout
        with self._cond:
            while any(self._positions.get(p, 0) < end for p, end in ends.items()):
                if self._error is not None:
                    raise RuntimeError(f"log reader of {self.topic} failed: {self._error!r}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"reading {self.topic} to its end timed out after {timeout}s")
                self._cond.wait(min(remaining, 0.5))

    def send(self, key: bytes, value: bytes | None, *, flush: bool = True) -> None:
        """Append ``key -> value`` (None is a tombstone); with ``flush``, return once acknowledged."""
        assert self._producer is not None
        self._producer.produce(self.topic, key=key, value=value)
        if flush:
            self.flush()

    def flush(self, timeout: float = 30) -> None:
        assert self._producer is not None
        if self._producer.flush(timeout) > 0:
            raise TimeoutError(f"writes to {self.topic} were not acknowledged within {timeout}s")

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._producer is not None:
            self._producer.flush(10)
        if self._consumer is not None:
            self._consumer.close()
        if self._end_query is not None:
            self._end_query.close()
