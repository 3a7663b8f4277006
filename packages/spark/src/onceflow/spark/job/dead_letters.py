"""Undecodable source records become dead letters with the reason, instead of crashing the job.

Two sinks, one per guarantee:

- :class:`StagedDeadLetters` (exactly-once jobs): the dead letters are a side output of the
  micro-batch (:mod:`onceflow.spark.sink.side_outputs`), committed with the batch's results in the
  same transaction to whatever the job binds ``dead_letters`` to.
- :class:`DeadLetterPublisher` (the at-least-once baseline and jobs that bind no ``dead_letters``
  output): produced straight to the dead-letter topic; a replayed batch publishes them again, and
  their headers name the source record so readers can drop duplicates.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import pyarrow as pa
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from onceflow.contract import DEAD_LETTERS_OUTPUT
from onceflow.core.kafka import idempotent_producer_config, produce
from onceflow.core.logging import get_logger

_log = get_logger(__name__)

#: Headers of a published dead letter: why it was rejected and where it came from.
REASON_HEADER = "onceflow.error"
TOPIC_HEADER = "onceflow.source.topic"
PARTITION_HEADER = "onceflow.source.partition"
OFFSET_HEADER = "onceflow.source.offset"
FLUSH_TIMEOUT_S = 60.0

#: The ``dead_letters`` output's rows.
DEAD_LETTER_SCHEMA: Final = pa.schema(
    [
        pa.field("source_topic", pa.string(), nullable=False),
        pa.field("source_partition", pa.int32(), nullable=False),
        pa.field("source_offset", pa.int64(), nullable=False),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("reason", pa.string(), nullable=False),
    ]
)
#: The dead-letter rows' natural key: the source record they come from.
DEAD_LETTER_KEYS: Final = ("source_topic", "source_partition", "source_offset")


@dataclass(frozen=True)
class DeadLetter:
    """One rejected record and the reason it was rejected."""

    key: bytes | None
    value: bytes | None
    reason: str
    topic: str
    partition: int
    offset: int

    def log_fields(self) -> dict[str, object]:
        """The ids of a log line about this record: ``topic=``, ``partition=``, ``offset=``."""
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset}


class DeadLetterSink(abc.ABC):
    """Where one task's dead letters go."""

    @abc.abstractmethod
    def add(self, letters: Sequence[DeadLetter]) -> None: ...

    @abc.abstractmethod
    def close(self) -> None:
        """Make every added dead letter durable; raise if that failed (the task then fails and retries)."""


def _log_letter(letter: DeadLetter, where: str) -> None:
    _log.warning("job.dead_letter", **letter.log_fields(), to=where, reason=letter.reason)


class StagedDeadLetters(DeadLetterSink):
    """Stages the task's dead letters as the micro-batch's ``dead_letters`` side output.

    ``batch_id`` stages them under that batch instead of the running micro-batch (a batch query).
    """

    def __init__(self, staging_root: str, job: str, batch_id: int | None = None) -> None:
        self.staging_root = staging_root
        self.job = job
        self.batch_id = batch_id
        self._letters: list[DeadLetter] = []

    def add(self, letters: Sequence[DeadLetter]) -> None:
        for letter in letters:
            _log_letter(letter, DEAD_LETTERS_OUTPUT)
        self._letters.extend(letters)

    def close(self) -> None:
        from onceflow.spark.sink.side_outputs import stage_side_output

        letters = self._letters
        batch = pa.RecordBatch.from_pylist(
            [
                {
                    "source_topic": d.topic,
                    "source_partition": d.partition,
                    "source_offset": d.offset,
                    "key": d.key,
                    "value": d.value,
                    "reason": d.reason,
                }
                for d in letters
            ],
            schema=DEAD_LETTER_SCHEMA,
        )
        stage_side_output(
            self.staging_root, self.job, DEAD_LETTERS_OUTPUT, DEAD_LETTER_SCHEMA, [batch], batch_id=self.batch_id
        )


class DeadLetterPublisher(DeadLetterSink):
    """Produces dead letters with an idempotent producer; :meth:`close` raises if any was not acknowledged."""

    def __init__(self, kafka_config: Mapping[str, object], topic: str) -> None:
        self.topic = topic
        self._config = idempotent_producer_config(kafka_config, **{"linger.ms": 20})
        self._producer: Producer | None = None
        self._errors: list[KafkaError] = []
        self.published = 0

    def _on_delivery(self, error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            self._errors.append(error)

    def add(self, letters: Sequence[DeadLetter]) -> None:
        for letter in letters:
            self.publish(letter)

    def publish(self, letter: DeadLetter) -> None:
        if self._producer is None:
            self._producer = Producer(self._config)
        headers: list[tuple[str, str | bytes | None]] = [
            (REASON_HEADER, letter.reason.encode("utf-8")),
            (TOPIC_HEADER, letter.topic.encode("utf-8")),
            (PARTITION_HEADER, str(letter.partition).encode()),
            (OFFSET_HEADER, str(letter.offset).encode()),
        ]
        produce(
            self._producer,
            self.topic,
            key=letter.key,
            value=letter.value,
            headers=headers,
            on_delivery=self._on_delivery,
        )
        self.published += 1
        _log_letter(letter, self.topic)

    def close(self) -> None:
        self.flush()

    def flush(self) -> None:
        """Wait until every dead letter is acknowledged; raise if one failed (the task then fails and retries)."""
        if self._producer is None:
            return
        remaining = self._producer.flush(FLUSH_TIMEOUT_S)
        if remaining or self._errors:
            errors, self._errors = self._errors, []
            timed_out = KafkaError(KafkaError._MSG_TIMED_OUT, f"{remaining} dead letters unacknowledged")
            raise KafkaException(errors[0] if errors else timed_out)
