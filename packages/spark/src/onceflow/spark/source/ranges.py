"""Read one partition's offset range ``[start, end)`` exactly, as Arrow record batches (runs in Spark tasks)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition
from pyspark.sql.datasource import InputPartition

from onceflow.core.end_of_input import EndOfInputMarker, is_marker
from onceflow.core.errors import SerializationError
from onceflow.core.kafka import RetryPolicy, is_transient, reader_config, watermark_offsets
from onceflow.core.logging import get_logger
from onceflow.spark.exceptions import OffsetsOutOfRange, SourceReadTimeout
from onceflow.spark.source.options import SourceOptions
from onceflow.spark.source.schema import arrow_schema
from onceflow.spark.worker_logging import ensure_worker_logging

_log = get_logger(__name__)

#: Records handed to Spark per Arrow batch (one ``consume`` call).
CONSUME_BATCH = 10_000
#: How long one ``consume`` call waits for its count: long in the body of a range, short in its last
#: :data:`CONSUME_BATCH` offsets, where the count may include control records that never come as
#: messages (the call would wait out its whole timeout).
CONSUME_WAIT_S = 0.2
CONSUME_WAIT_AT_END_S = 0.01
_OUT_OF_RANGE = {KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET}


class OffsetRange(InputPartition):
    """One Spark task's work: offsets ``[start, end)`` of one topic-partition. Picklable.

    ``batch_end`` holds the end offset of every partition in the same micro-batch: an end-of-input
    marker is the end of the input only when the whole batch reads up to the marker's end offsets.
    """

    def __init__(
        self, topic: str, partition: int, start: int, end: int, batch_end: Mapping[int, int] | None = None
    ) -> None:
        super().__init__(f"{topic}-{partition}[{start},{end})")
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end
        self.batch_end = dict(batch_end) if batch_end is not None else {partition: end}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OffsetRange) and (self.topic, self.partition, self.start, self.end) == (
            other.topic,
            other.partition,
            other.start,
            other.end,
        )

    def __hash__(self) -> int:
        return hash((self.topic, self.partition, self.start, self.end))


def _batch(messages: list[Message], topic: str, partition: int, ends: list[bool]) -> pa.RecordBatch:
    stamps = [m.timestamp()[1] for m in messages]
    return pa.RecordBatch.from_arrays(
        [
            pa.array([m.key() for m in messages], pa.binary()),
            pa.array([m.value() for m in messages], pa.binary()),
            pa.array([topic] * len(messages), pa.string()),
            pa.array([partition] * len(messages), pa.int32()),
            pa.array([m.offset() for m in messages], pa.int64()),
            pa.array([s * 1000 if s >= 0 else None for s in stamps], pa.timestamp("us", tz="UTC")),
            pa.array(ends, pa.bool_()),
        ],
        schema=arrow_schema(),
    )


def read_range(options: SourceOptions, task: OffsetRange) -> Iterator[pa.RecordBatch]:
    """Yield every record of ``task``'s range that the isolation level lets through, in offset order.

    Steps:
        1. Check the range is still in the topic. If its start was deleted: fail naming the
           topic-partition, or (``failOnDataLoss=false``) log and start at the earliest offset.
        2. Assign the partition at ``start`` and consume. Offsets missing from the output (control
           records, aborted transactions) are simply not there: the range is done when the consumer's
           *position* reaches ``end``, not when a record at ``end - 1`` shows up.
        3. Records at or past ``end`` (prefetched) are dropped. A transient client error (a broker
           down, a leader moving) is informational: the consumer recovers by itself. A range that
           makes no progress for ``fetch_timeout_s`` fails the task.
        4. An end-of-input marker becomes a row with ``end_of_input = true`` when the batch reads every
           partition up to the marker's end offsets (no record of the input can come later), and is
           dropped otherwise (a later marker of the same input ends it).
    """
    if task.start >= task.end:
        return
    ensure_worker_logging()
    tp = TopicPartition(task.topic, task.partition)
    # Partition EOF on (reader_config's default): a range that ends at the partition's end is done when
    # the EOF event comes, not when the last consume call times out waiting for records that will not.
    # Every record of the range is there already (end <= the LSO when planned), so the broker has
    # nothing to wait for but the EOF: a short long-poll (10 ms, not 100) ends such a range sooner.
    overrides = {"auto.offset.reset": "error", "fetch.wait.max.ms": 10}
    consumer = Consumer(
        reader_config(
            options.client_config(),
            group_prefix="onceflow-spark-reader-",
            isolation_level=options.isolation_level,
            **overrides,
        )
    )
    retry = RetryPolicy(timeout_s=options.fetch_timeout_s)

    def earliest_offset() -> int:
        return watermark_offsets(consumer, tp, policy=retry)[0]

    try:
        # Step 1
        start = task.start
        earliest = earliest_offset()
        if start < earliest:
            start = _on_data_loss(options, task, start, earliest)
            if start >= task.end:
                return
        # Step 2
        consumer.assign([TopicPartition(task.topic, task.partition, start)])
        position = start
        last_progress = time.monotonic()
        while position < task.end:
            # Ask for no more than the range still holds, so the call returns as soon as it is read;
            # control records and aborted data count as offsets but never come as messages, so near
            # the range's end the call returns on a short timeout instead (CONSUME_WAIT_AT_END_S).
            remaining = task.end - position
            wait = CONSUME_WAIT_S if remaining > CONSUME_BATCH else CONSUME_WAIT_AT_END_S
            messages = consumer.consume(min(CONSUME_BATCH, remaining), timeout=wait)
            records: list[Message] = []
            ends: list[bool] = []
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() in _OUT_OF_RANGE:
                        position = _on_data_loss(options, task, position, earliest_offset())
                        consumer.assign([TopicPartition(task.topic, task.partition, position)])
                        break
                    if error.code() == KafkaError._PARTITION_EOF or is_transient(error):
                        continue
                    raise KafkaException(error)
                offset = message.offset()
                # Step 3
                if offset is None or offset >= task.end:
                    continue
                # Step 4
                end_of_input = is_marker(message.headers())
                if end_of_input and not _ends_input(message, task):
                    continue
                records.append(message)
                ends.append(end_of_input)
            if records:
                yield _batch(records, task.topic, task.partition, ends)
            current = consumer.position([tp])[0].offset
            if current is not None and current > position:
                position = current
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > options.fetch_timeout_s:
                raise SourceReadTimeout(
                    task.topic,
                    task.partition,
                    start=task.start,
                    end=task.end,
                    position=position,
                    timeout_s=options.fetch_timeout_s,
                )
    finally:
        consumer.close()


def _ends_input(message: Message, task: OffsetRange) -> bool:
    """Step 4: whether the marker ``message`` ends the input in this batch."""
    try:
        marker = EndOfInputMarker.decode(message.value())
    except SerializationError as exc:
        _log.warning("source.bad_end_of_input_marker", topic=task.topic, partition=task.partition,
                     offset=message.offset(), error=str(exc))  # fmt: skip
        return False
    covered = marker.covered_by(task.batch_end)
    _log.info("source.end_of_input", topic=task.topic, partition=task.partition, offset=message.offset(),
              source=marker.source, ends_input=covered, end_offsets=dict(marker.end_offsets),
              batch_end=task.batch_end)  # fmt: skip
    return covered


def _on_data_loss(options: SourceOptions, task: OffsetRange, position: int, earliest: int) -> int:
    """Where to continue after ``position`` turned out to be deleted; raises unless failOnDataLoss=false."""
    if options.fail_on_data_loss:
        raise OffsetsOutOfRange(task.topic, task.partition, position, earliest)
    _log.warning(
        "source.data_loss_skipped",
        topic=task.topic,
        partition=task.partition,
        missing_from=position,
        missing_to=earliest - 1,
    )
    return max(position, earliest)
