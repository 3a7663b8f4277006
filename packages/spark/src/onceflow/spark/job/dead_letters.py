"""Undecodable source records go to the dead-letter topic with the reason, instead of crashing the job."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from onceflow.core.logging import get_logger

_log = get_logger(__name__)

#: Headers of a dead letter: why it was rejected and where it came from (a replayed micro-batch may
#: publish the same dead letter twice; topic/partition/offset identify duplicates).
REASON_HEADER = "onceflow.error"
TOPIC_HEADER = "onceflow.source.topic"
PARTITION_HEADER = "onceflow.source.partition"
OFFSET_HEADER = "onceflow.source.offset"
FLUSH_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class DeadLetter:
    """One rejected record and the reason it was rejected."""

    key: bytes | None
    value: bytes | None
    reason: str
    topic: str
    partition: int
    offset: int


class DeadLetterPublisher:
    """Produces dead letters with an idempotent producer; :meth:`flush` raises if any was not acknowledged.

    Dead letters are at-least-once (a replayed batch publishes them again); their headers name the
    source record, so readers can drop duplicates.
    """

    def __init__(self, kafka_config: Mapping[str, object], topic: str) -> None:
        self.topic = topic
        self._config = {**kafka_config, "enable.idempotence": True, "linger.ms": 20}
        self._producer: Producer | None = None
        self._errors: list[KafkaError] = []
        self.published = 0

    def _on_delivery(self, error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            self._errors.append(error)

    def publish(self, letter: DeadLetter) -> None:
        if self._producer is None:
            self._producer = Producer(self._config)
        headers: list[tuple[str, str | bytes | None]] = [
            (REASON_HEADER, letter.reason.encode("utf-8")),
            (TOPIC_HEADER, letter.topic.encode("utf-8")),
            (PARTITION_HEADER, str(letter.partition).encode()),
            (OFFSET_HEADER, str(letter.offset).encode()),
        ]
        while True:
            try:
                self._producer.produce(
                    self.topic, key=letter.key, value=letter.value, headers=headers, on_delivery=self._on_delivery
                )
                break
            except BufferError:
                self._producer.poll(0.1)
        self.published += 1
        _log.warning(
            "job.dead_letter",
            topic=letter.topic,
            partition=letter.partition,
            offset=letter.offset,
            dead_letter_topic=self.topic,
            reason=letter.reason,
        )

    def flush(self) -> None:
        """Wait until every dead letter is acknowledged; raise if one failed (the task then fails and retries)."""
        if self._producer is None:
            return
        remaining = self._producer.flush(FLUSH_TIMEOUT_S)
        if remaining or self._errors:
            errors, self._errors = self._errors, []
            timed_out = KafkaError(KafkaError._MSG_TIMED_OUT, f"{remaining} dead letters unacknowledged")
            raise KafkaException(errors[0] if errors else timed_out)
