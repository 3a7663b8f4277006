"""Producing: back-pressure on a full local queue, and what fencing looks like.

A librdkafka producer refuses a record with ``BufferError`` (``produce``), or marks it with a queue
full ``_error`` (``produce_batch``), when its local queue is full; the record is not lost, the
caller must serve delivery reports (``poll``) and try again. A
transactional producer that a newer instance with the same ``transactional.id`` fenced reports one
of :data:`FENCED_CODES`; onceflow turns those into one exception, :class:`ProducerFenced`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException, Producer

from onceflow.core.errors import ProducerFenced

#: librdkafka's and the broker's ways of saying "a newer producer owns this transactional id".
FENCED_CODES: Final = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH})
#: How long to serve delivery reports before trying a refused record again.
QUEUE_FULL_POLL_S: Final = 0.05
#: How long :func:`produce_acknowledged` waits for the broker's acknowledgements by default.
ACK_TIMEOUT_S: Final = 30.0


def is_fenced(error: KafkaError | KafkaException | None) -> bool:
    """Whether ``error`` (or the KafkaError inside a KafkaException) says the producer was fenced."""
    if isinstance(error, KafkaException):
        error = error.args[0] if error.args and isinstance(error.args[0], KafkaError) else None
    return error is not None and error.code() in FENCED_CODES


def raise_if_fenced(exc: KafkaException, transactional_id: str) -> None:
    """Raise :class:`ProducerFenced` for ``transactional_id`` when ``exc`` is a fencing error."""
    if is_fenced(exc):
        raise ProducerFenced(transactional_id, f"({exc.args[0].str()})") from exc


def produce(producer: Producer, topic: str, **record: Any) -> None:
    """``producer.produce(topic, **record)``, waiting (and serving delivery reports) while the queue is full."""
    while True:
        try:
            producer.produce(topic, **record)
            return
        except BufferError:
            producer.poll(QUEUE_FULL_POLL_S)


def produce_all(
    producer: Producer,
    topic: str,
    records: list[dict[str, Any]],
    *,
    on_delivery: Callable[[KafkaError | None, Any], None],
) -> None:
    """Queue ``records`` (dicts of ``key`` and ``value``, no headers) in order with one
    ``produce_batch`` call, partitioned by key as ``produce`` does; the ones refused because the
    queue is full are tried again after serving delivery reports. Any other refusal raises
    :class:`KafkaException`, as ``produce`` does. ``records`` is consumed."""
    pending = records
    while pending:
        producer.produce_batch(topic, pending, on_delivery=on_delivery)
        refused = [record for record in pending if "_error" in record]
        for record in refused:
            error = record.pop("_error")
            if error.code() != KafkaError._QUEUE_FULL:
                raise KafkaException(error)
        if refused:
            producer.poll(QUEUE_FULL_POLL_S)
        pending = refused


def flush_acknowledged(producer: Producer, topic: str, timeout: float = ACK_TIMEOUT_S) -> None:
    """Flush ``producer``: :class:`TimeoutError` naming ``topic`` if a record is still unacknowledged
    after ``timeout`` (what a refused record's callback saw is the caller's to check)."""
    if producer.flush(timeout) > 0:
        raise TimeoutError(f"writes to {topic} were not acknowledged within {timeout}s")


def produce_acknowledged(
    producer: Producer, topic: str, records: Iterable[dict[str, Any]], *, timeout: float = ACK_TIMEOUT_S
) -> None:
    """Produce ``records`` (the keyword arguments of ``produce``: key, value, partition, headers) and
    return once the broker acknowledged every one: a write that must land (a store's record, a
    schema), not one that may vanish unseen.

    Steps:
        1. Produce each record with a delivery callback that keeps the first refusal.
        2. Flush: :class:`TimeoutError` if a record is still unacknowledged after ``timeout``.
        3. A refused record raises :class:`KafkaException` with the broker's error code and a reason
           naming the topic and the record's key (Kafka Connect's ``sendWithReceipt`` fails the
           same way).
    """
    refused: list[tuple[KafkaError, bytes | str | None]] = []

    def delivered(error: KafkaError | None, message: Any) -> None:
        if error is not None and not refused:
            refused.append((error, message.key() if message is not None else None))

    # Step 1
    for record in records:
        produce(producer, topic, on_delivery=delivered, **record)
    # Step 2
    flush_acknowledged(producer, topic, timeout)
    # Step 3
    if refused:
        error, key = refused[0]
        shown = key.decode(errors="replace") if isinstance(key, bytes) else key
        raise KafkaException(KafkaError(error.code(), f"writing {shown!r} to {topic} failed: {error.str()}"))
