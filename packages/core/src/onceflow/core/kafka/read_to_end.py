"""Read a topic to its end, as Kafka Connect's ``KafkaBasedLog.readToEnd`` does.

"The end" is the end offsets captured when the read starts; records produced later are not
returned, so the cut is consistent while writers go on. Which end offsets, :data:`Until` says:

- ``"last_stable"``: the last stable offset (a read_committed client's end): an open transaction
  and what follows it are not part of the cut;
- ``"high_watermark"``: every record written, open transactions included. Read with
  read_committed, this waits for every transaction open at the start to end, so a reader never
  misses a record committed before it started (what a store needs for read-your-writes).

Transient errors (a broker down, a leader moving) are retried: the metadata and end-offset queries
through :func:`~onceflow.core.kafka.retry.retry_transient` and
:func:`~onceflow.core.kafka.routed.watermark_offsets` (which look a moved leader up again), and a
consumer's own transient errors are informational, as librdkafka intends (:func:`position_after`).

- :func:`read_to_end`: the records, in offset order per partition;
- :func:`read_committed`: the committed records of a whole topic (the audit's and readers' cut);
- :func:`end_offsets` / :func:`partition_offsets`: the end offsets alone.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition

from onceflow.core.kafka.config import IsolationLevel, reader_config
from onceflow.core.kafka.retry import RetryPolicy, is_transient, retry_transient
from onceflow.core.kafka.routed import watermark_offsets
from onceflow.core.logging import get_logger
from onceflow.core.settings import KafkaSettings

#: Which end offsets a read stops at (see the module docstring).
Until = Literal["last_stable", "high_watermark"]
#: The group-id prefix of a reader that names none (the ACLs grant it to the participants and the consumer).
READ_GROUP_PREFIX: Final = "onceflow-read-"

_log = get_logger(__name__)


@dataclass(frozen=True)
class TopicRecord:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()

    def header(self, name: str) -> bytes | None:
        """The last value of header ``name`` (None when absent)."""
        found = [value for key, value in self.headers if key == name]
        return found[-1] if found else None


class TopicNotFound(KafkaException):
    """The topic does not exist (or its metadata has an error that is not transient)."""


def _headers(raw: object) -> tuple[tuple[str, bytes], ...]:
    """librdkafka's headers (a list of pairs, or None) as ``(name, bytes)`` pairs."""
    if not isinstance(raw, list):
        return ()
    return tuple((str(k), v if isinstance(v, bytes) else str(v or "").encode()) for k, v in raw)


def partition_offsets(consumer: Consumer, topic: str, *, policy: RetryPolicy) -> dict[int, tuple[int, int]]:
    """``(low, high)`` of every partition of ``topic`` as ``consumer`` sees them (high is the last
    stable offset for a read_committed consumer, else the high watermark), asked again while a
    partition's leader is away, being elected or has just moved, within ``policy``.

    Raises :class:`TopicNotFound` when the topic does not exist (or its metadata has another error
    that is not transient).
    """
    what = f"end offsets of {topic}"
    metadata_timeout = policy.timeout_s if policy.timeout_s > 0 else -1

    def partitions() -> list[int]:
        described = consumer.list_topics(topic, timeout=metadata_timeout).topics.get(topic)
        if described is None:
            raise TopicNotFound(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, f"topic {topic} does not exist"))
        if described.error is not None:
            if is_transient(described.error):
                raise KafkaException(described.error)
            raise TopicNotFound(KafkaError(described.error.code(), f"topic {topic}: {described.error.str()}"))
        return sorted(described.partitions)

    return {
        p: watermark_offsets(consumer, TopicPartition(topic, p), what=what, policy=policy)
        for p in retry_transient(partitions, what=what, policy=policy)
    }


def end_offsets(
    client_config: Mapping[str, Any],
    topic: str,
    *,
    until: Until = "high_watermark",
    policy: RetryPolicy | None = None,
    group_prefix: str = READ_GROUP_PREFIX,
) -> dict[int, int]:
    """The end offset of every partition of ``topic`` now (see :data:`Until`; ``policy``: 30 s)."""
    consumer = Consumer(reader_config(client_config, group_prefix=group_prefix, isolation_level=_isolation(until)))
    try:
        ends = partition_offsets(consumer, topic, policy=policy or RetryPolicy(timeout_s=30.0))
        return {partition: high for partition, (_, high) in ends.items()}
    finally:
        consumer.close()


def _isolation(until: Until) -> IsolationLevel:
    return "read_committed" if until == "last_stable" else "read_uncommitted"


def position_after(message: Message) -> tuple[int, int] | None:
    """``(partition, next position)`` a consumed message moves its partition to; None for a client error.

    A partition-EOF event moves it to its offset; a record, past it. A transient client error (a
    broker down, a leader moving) is informational: librdkafka recovers by itself, so it is logged
    and skipped. Any other error is raised as a ``KafkaException``.
    """
    error = message.error()
    partition, offset = message.partition(), message.offset()
    if error is not None and error.code() != KafkaError._PARTITION_EOF:
        if is_transient(error):
            _log.debug("kafka.read_transient_error", topic=message.topic(), error=error.name())
            return None
        raise KafkaException(error)
    if partition is None or offset is None:
        return None
    return partition, offset if error is not None else offset + 1


def read_to_end(
    client_config: Mapping[str, Any],
    topic: str,
    *,
    until: Until,
    isolation_level: IsolationLevel = "read_committed",
    timeout: float = 120.0,
    policy: RetryPolicy | None = None,
    group_prefix: str = READ_GROUP_PREFIX,
) -> Iterator[TopicRecord]:
    """Every record of ``topic`` up to the end offsets ``until`` names at the start, in offset order
    per partition (read with ``isolation_level``: read_committed skips aborted and control records).

    Steps:
        1. Take the ``(low, high)`` offsets of every partition (metadata and offset queries retried
           within ``policy``; default: ``timeout``). A partition whose high is not above its low
           holds nothing to read.
        2. Read every other partition from its beginning until its position reaches its end offset
           (a record at the end offset or past it is not returned), within ``timeout`` (then
           ``TimeoutError`` naming the topic, the partitions left and the end offsets).

    Raises :class:`TopicNotFound` when the topic does not exist, :class:`KafkaUnavailable` when the
    brokers stay away past ``policy``, and a ``KafkaException`` for any other Kafka error.
    """
    policy = policy or RetryPolicy(timeout_s=timeout)
    consumer = Consumer(reader_config(client_config, group_prefix=group_prefix, isolation_level=isolation_level))
    try:
        # Step 1
        if until == "last_stable" and isolation_level == "read_committed":
            offsets = partition_offsets(consumer, topic, policy=policy)
        else:
            ends_config = reader_config(client_config, group_prefix=group_prefix, isolation_level=_isolation(until))
            ends_consumer = Consumer(ends_config)
            try:
                offsets = partition_offsets(ends_consumer, topic, policy=policy)
            finally:
                ends_consumer.close()
        ends = {p: high for p, (low, high) in offsets.items() if high > low}
        # Step 2
        remaining = set(ends)
        if not remaining:
            return
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(remaining)])
        deadline = time.monotonic() + timeout
        while remaining:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"reading {topic} to its end timed out after {timeout}s "
                    f"(partitions {sorted(remaining)} of end offsets {ends})"
                )
            for message in consumer.consume(10_000, timeout=0.2):
                moved = position_after(message)
                if moved is None or moved[0] not in remaining:
                    continue
                partition, position = moved
                if message.error() is None and position <= ends[partition]:
                    key, value = message.key(), message.value()
                    yield TopicRecord(partition, position - 1, key, value, _headers(message.headers()))
                if position >= ends[partition]:
                    remaining.discard(partition)
    finally:
        consumer.close()


def read_committed(kafka: KafkaSettings, topic: str, *, timeout: float = 120.0) -> Iterator[TopicRecord]:
    """Every committed record of ``topic`` up to its last stable offset at the start, in offset order
    per partition (:func:`read_to_end` with ``until="last_stable"``, read_committed)."""
    return read_to_end(kafka.client_config(), topic, until="last_stable", timeout=timeout)
