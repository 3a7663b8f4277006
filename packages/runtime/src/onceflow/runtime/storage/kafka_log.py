"""A compacted Kafka topic used as a replicated log of keyed state (after Kafka Connect's ``KafkaBasedLog``).

"Read to the end" means: take the high watermark of every partition *now*, then consume until the
position passes it (:mod:`onceflow.core.kafka.read_to_end`, ``until="high_watermark"``): a reader
never misses a record committed before it started reading. The follower thread treats a consumer's
transient errors as informational, as librdkafka intends, and keeps reading
(:func:`onceflow.core.kafka.position_after`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from onceflow.core.kafka import (
    DEFAULT_REPLICATION,
    Replication,
    RetryPolicy,
    TopicSpec,
    ensure_topics,
    flush_acknowledged,
    idempotent_producer_config,
    partition_offsets,
    position_after,
    produce,
    produce_acknowledged,
    reader_config,
    retry_transient,
)
from onceflow.core.logging import get_logger

RecordHandler = Callable[[bytes | None, bytes | None], None]
#: Hears of a record of an internal topic that could not be decoded and was skipped: (topic, key, reason).
SkippedRecordListener = Callable[[str, str, str], None]
#: The group-id prefix of the runtime's readers (the ACLs grant it to the connect worker).
GROUP_PREFIX: Final = "onceflow-log-reader-"
#: How long an end-offset query of a store retries through a broker or leader away.
END_OFFSETS_RETRY: Final = RetryPolicy(timeout_s=30.0)
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


def _reader(client_config: Mapping[str, Any]) -> Consumer:
    return Consumer(reader_config(client_config, group_prefix=GROUP_PREFIX, isolation_level="read_uncommitted"))


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
        self._producer = Producer(idempotent_producer_config(self._client_config, **{"linger.ms": 0}))
        self._consumer = _reader(self._client_config)
        self._end_query = _reader(self._client_config)
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
            ends = {
                p: high
                for p, (_, high) in partition_offsets(self._end_query, self.topic, policy=END_OFFSETS_RETRY).items()
            }
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
        """Append ``key -> value`` (None is a tombstone).

        With ``flush``, return once the broker acknowledged it; a refusal raises
        :class:`KafkaException` naming the topic and key (:func:`~onceflow.core.kafka.produce_acknowledged`):
        a config written to a log that did not take it is an error, not a write that vanishes.
        Without ``flush`` (task statuses, best effort as in Kafka Connect), a refusal is logged.
        """
        assert self._producer is not None
        if flush:
            produce_acknowledged(self._producer, self.topic, [{"key": key, "value": value}])
            return

        def delivered(error: KafkaError | None, _: Any) -> None:
            if error is not None:
                _log.warning(
                    "kafka_log.write_refused", topic=self.topic, key=key.decode(errors="replace"), error=str(error)
                )

        produce(self._producer, self.topic, key=key, value=value, on_delivery=delivered)

    def flush(self, timeout: float = 30) -> None:
        assert self._producer is not None
        flush_acknowledged(self._producer, self.topic, timeout)

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
