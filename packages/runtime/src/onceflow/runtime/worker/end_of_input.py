"""Ending a bounded input: the runtime side of :class:`~onceflow.runtime.api.source.EndOfInput`.

A source task that finished its input hands the runtime an ``EndOfInput``. The runtime (from
:meth:`AbstractWorkerSourceTask.end_input`):

    1. commits every record dispatched so far (the input's last records);
    2. commits the task's final source offset (it says the input ended), so a restarted task does
       not read on, and step 1's records and this offset are durable before any marker exists;
    3. reads the connector's committed offsets back: while fewer than ``EndOfInput.sources`` of its
       source partitions have ended, it stops here (another task's input is still coming; the last
       task to end sees every other one ended, because it commits after them);
    4. writes one end-of-input marker to every partition of each topic, carrying the topic's high
       watermarks read after step 2 (every record of the input lies below them), and commits.

A crash anywhere repeats the steps after the restart (the task reports its end again): markers are
idempotent, a second one changes nothing for a reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import Producer

from onceflow.core.end_of_input import HEADER, EndOfInputMarker
from onceflow.core.kafka import RetryPolicy, end_offsets, produce, transactional_producer_config
from onceflow.runtime.api.source import END_OF_INPUT_KEY, EndOfInput, SourceRecord
from onceflow.runtime.storage.kafka_log import GROUP_PREFIX


def has_ended(offset: Mapping[str, Any] | None) -> bool:
    """Whether a committed source offset is the final one of an input."""
    return bool(offset and offset.get(END_OF_INPUT_KEY))


def ended_sources(offsets: list[tuple[dict[str, Any], dict[str, Any]]]) -> int:
    """How many of a connector's source partitions have ended (step 3)."""
    return sum(1 for _, offset in offsets if has_ended(offset))


def marker_records(end: EndOfInput, connector: str, end_offsets: Mapping[str, Mapping[int, int]]) -> list[SourceRecord]:
    """Step 4's records: one marker per partition of every topic of ``end``, with that topic's end offsets."""
    records: list[SourceRecord] = []
    for topic in end.topics:
        offsets = dict(end_offsets[topic])
        value = EndOfInputMarker(connector, offsets).encode()
        for partition in sorted(offsets):
            records.append(
                SourceRecord(
                    end.source_partition,
                    end.source_offset,
                    topic,
                    value,
                    None,
                    headers=[(HEADER, b"1")],
                    partition=partition,
                )
            )
    return records


def write_end_of_input(
    client_config: Mapping[str, Any], topic: str, source: str, *, timeout: float = 60.0
) -> dict[int, int]:
    """End the input of ``topic`` from outside a connector (``onceflow topics end-of-input``): for a
    topic filled by another producer, once that producer is done. Step 4 of the module docstring,
    in a transaction of its own (``transactional.id = onceflow-end-of-input-<topic>``, so a retry
    fences a half-done attempt). Returns the end offsets the markers carry."""
    offsets = end_offsets(client_config, topic, policy=RetryPolicy(timeout_s=timeout), group_prefix=GROUP_PREFIX)
    value = EndOfInputMarker(source, offsets).encode()
    producer = Producer(transactional_producer_config(client_config, f"onceflow-end-of-input-{topic}"))
    producer.init_transactions(timeout)
    producer.begin_transaction()
    for partition in sorted(offsets):
        produce(producer, topic, value=value, partition=partition, headers=[(HEADER, b"1")])
    producer.commit_transaction(timeout)
    return offsets
