"""Commit markers of the Kafka sink: the last batch of a job committed to the sink topic."""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from onceflow.core.kafka import Replication, TopicNotFound, TopicSpec, read_committed
from onceflow.core.kafka import ensure_topics as create_missing
from onceflow.core.settings import KafkaSettings

NO_BATCH: Final = -1


def marker_key(sink: str, job: str) -> bytes:
    """The marker record's key: ``<sink>:<job>`` (``sink`` is a record name: ``<sink>#<index>`` for a shard)."""
    return f"{sink}:{job}".encode()


def marker_value(batch: int) -> bytes:
    """The marker record's value: the batch number in decimal."""
    return str(batch).encode()


def ensure_topics(kafka: KafkaSettings, topic: str, commits_topic: str, timeout: float = 30.0) -> None:
    """Create the sink topic and the compacted commits topic if they do not exist yet, replicated as
    ``kafka.replication_factor`` and ``kafka.min_insync_replicas`` say."""
    wanted = [TopicSpec(topic), TopicSpec(commits_topic, 1, {"cleanup.policy": "compact"})]
    create_missing(kafka.client_config(), wanted, replication=Replication.of(kafka), timeout=timeout)


def read_last_committed_by_job(
    kafka: KafkaSettings, commits_topic: str, sink: str, timeout: float = 60.0
) -> dict[str, int]:
    """The highest batch committed per job of ``sink`` (read_committed), from every marker of the topic."""
    prefix = marker_key(sink, "")
    last: dict[str, int] = {}
    try:
        for record in read_committed(kafka, commits_topic, timeout=timeout):
            if record.key is not None and record.key.startswith(prefix) and record.value is not None:
                job = record.key[len(prefix) :].decode()
                last[job] = max(last.get(job, NO_BATCH), int(record.value.decode()))
    except TopicNotFound:
        return {}
    return last


def read_last_committed(kafka: KafkaSettings, commits_topic: str, key: bytes, timeout: float = 60.0) -> int:
    """The highest batch committed under ``key`` (read_committed), or :data:`NO_BATCH`.

    Reads the compacted commits topic from the beginning up to its last stable offset. Call it
    only after ``init_transactions`` of the producer that writes ``key``: that aborts any
    transaction a predecessor left open, which would otherwise hold the last stable offset back.
    """
    return read_last_committed_keys(kafka, commits_topic, (key,), timeout)[key]


def read_last_committed_keys(
    kafka: KafkaSettings, commits_topic: str, keys: Collection[bytes], timeout: float = 60.0
) -> dict[bytes, int]:
    """:func:`read_last_committed` of several keys (the shards of a sink) in one read of the topic."""
    last = dict.fromkeys(keys, NO_BATCH)
    try:
        for record in read_committed(kafka, commits_topic, timeout=timeout):
            if record.key in last and record.value is not None:
                last[record.key] = max(last[record.key], int(record.value.decode()))
    except TopicNotFound:
        pass
    return last
