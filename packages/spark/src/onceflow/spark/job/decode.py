"""Decode AccessEvent values batch by batch (``mapInArrow``); undecodable records become dead letters."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import pyarrow as pa

from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.core.end_of_input import END_OF_INPUT_TIME_MS
from onceflow.core.errors import SerializationError
from onceflow.spark.job.dead_letters import DeadLetter, DeadLetterPublisher
from onceflow.spark.job.end_of_input import END_OF_INPUT_COLUMN
from onceflow.spark.worker_logging import ensure_worker_logging

#: What the decoder emits per good record; event time stays epoch milliseconds until Spark casts it.
DECODED_SCHEMA_DDL = "event_time_ms long, ip string"
DECODED_ARROW_SCHEMA = pa.schema([pa.field("event_time_ms", pa.int64()), pa.field("ip", pa.string())])


def decode_batch(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, list[DeadLetter]]:
    """The ``(event_time_ms, ip)`` of every decodable record of ``batch``, and a dead letter for each other one.

    The end-of-input row passes with the end of time as its event time (see
    :mod:`onceflow.spark.job.end_of_input`).
    """
    values = batch.column("value").to_pylist()
    ends = batch.column(END_OF_INPUT_COLUMN).to_pylist() if END_OF_INPUT_COLUMN in batch.schema.names else None
    times: list[int] = []
    ips: list[str] = []
    dead: list[DeadLetter] = []
    decode = ACCESS_EVENT_SERDE.decode
    for index, value in enumerate(values):
        if ends is not None and ends[index]:
            times.append(END_OF_INPUT_TIME_MS)  # the end of the input: closes every window, then filtered out
            ips.append("")
            continue
        try:
            if value is None:
                raise SerializationError("null value (tombstone): an AccessEvent was expected")
            event = decode(value)
        except SerializationError as exc:
            row = batch.slice(index, 1).to_pylist()[0]
            dead.append(
                DeadLetter(
                    key=row["key"],
                    value=value,
                    reason=f"{type(exc).__name__}: {exc}",
                    topic=row["topic"],
                    partition=row["partition"],
                    offset=row["offset"],
                )
            )
            continue
        times.append(event["event_time"])
        ips.append(event["ip"])
    decoded = pa.RecordBatch.from_arrays(
        [pa.array(times, pa.int64()), pa.array(ips, pa.string())], schema=DECODED_ARROW_SCHEMA
    )
    return decoded, dead


def access_event_decoder(
    kafka_config: Mapping[str, object], dead_letter_topic: str
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of the job: source rows in, ``(event_time_ms, ip)`` out.

    Dead letters are flushed before the task's last batch is handed on, so a task only succeeds
    once its rejected records are in the dead-letter topic.
    """
    config = dict(kafka_config)

    def decode_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ensure_worker_logging()
        publisher = DeadLetterPublisher(config, dead_letter_topic)
        for batch in batches:
            decoded, dead = decode_batch(batch)
            for letter in dead:
                publisher.publish(letter)
            if decoded.num_rows:
                yield decoded
        publisher.flush()

    return decode_partition
