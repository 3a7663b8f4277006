"""The at-least-once baseline: the same counts written straight to ``ip_count_sink``, without 2PC.

It exists only so benchmarks can measure what exactly-once costs. A crash between producing a
batch's rows and Spark's commit log re-runs the batch and produces its rows again: duplicates.
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from pyspark.sql import DataFrame

from onceflow.core.avro import IP_COUNT_SERDE, IpCount
from onceflow.core.kafka import produce
from onceflow.core.logging import get_logger
from onceflow.spark.examples.ip_count import OUTPUT_COLUMNS
from onceflow.spark.job.settings import SparkJobSettings

_log = get_logger(__name__)


def at_least_once_writer(settings: SparkJobSettings) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function: collect the batch's counts and produce them with a plain producer."""
    producer = Producer(settings.kafka.client_config(**{"enable.idempotence": True, "linger.ms": 5}))
    topic = settings.sink_topic

    def write_batch(frame: DataFrame, batch_id: int) -> None:
        errors: list[KafkaError] = []

        def on_delivery(error: KafkaError | None, _message: Message) -> None:
            if error is not None:
                errors.append(error)

        rows = frame.select(*OUTPUT_COLUMNS).collect()
        for row in rows:
            record = IpCount(window_start=row[0], window_end=row[1], ip=row[2], count=row[3])
            produce(
                producer,
                topic,
                key=record["ip"].encode("utf-8"),
                value=IP_COUNT_SERDE.encode(record),
                on_delivery=on_delivery,
            )
        remaining = producer.flush(60)
        if remaining or errors:
            raise KafkaException(errors[0] if errors else KafkaError(KafkaError._MSG_TIMED_OUT))
        _log.info("baseline.batch_written", job=settings.job, batch=batch_id, rows=len(rows), topic=topic)

    return write_batch
