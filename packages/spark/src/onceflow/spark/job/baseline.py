"""The at-least-once baseline: the job's output written straight to ``sink_topic``, without 2PC.

It exists only so benchmarks can measure what exactly-once costs. A crash between producing a
batch's rows and Spark's commit log re-runs the batch and produces its rows again: duplicates.

The records are what a Kafka binding of the output writes: Avro single-object values of the writer
schema derived from the output's schema (:func:`onceflow.core.avro.arrow.avro_schema`, record
``sink_record_name``), keyed by ``sink_keys``. The baseline knows no job: any output goes.
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema

from onceflow.contract import DEFAULT_OUTPUT
from onceflow.core.avro import SingleObjectSerde
from onceflow.core.avro.arrow import avro_schema, record_name
from onceflow.core.kafka import idempotent_producer_config, produce
from onceflow.core.logging import get_logger
from onceflow.sinks.kafka.records import record_key
from onceflow.spark.job.settings import SparkJobSettings

_log = get_logger(__name__)


def at_least_once_writer(settings: SparkJobSettings) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function: collect the batch's rows and produce them with a plain producer."""
    producer = Producer(idempotent_producer_config(settings.kafka.client_config(), **{"linger.ms": 5}))
    topic, keys = settings.sink_topic, settings.sink_keys
    full_name = settings.sink_record_name or record_name(settings.job, DEFAULT_OUTPUT)
    serdes: dict[str, SingleObjectSerde[dict[str, object]]] = {}

    def write_batch(frame: DataFrame, batch_id: int) -> None:
        errors: list[KafkaError] = []

        def on_delivery(error: KafkaError | None, _message: Message) -> None:
            if error is not None:
                errors.append(error)

        # one writer schema per output schema (the same for every batch of a query)
        schema = frame.schema.json()
        if schema not in serdes:
            writer = avro_schema(to_arrow_schema(frame.schema), full_name, DEFAULT_OUTPUT)
            serdes[schema] = SingleObjectSerde(writer, logical_types=True)
        encode = serdes[schema].encode
        rows = [row.asDict() for row in frame.collect()]
        for row in rows:
            key = record_key(row, keys) if keys else None
            produce(producer, topic, key=key, value=encode(row), on_delivery=on_delivery)
        remaining = producer.flush(60)
        if remaining or errors:
            raise KafkaException(errors[0] if errors else KafkaError(KafkaError._MSG_TIMED_OUT))
        _log.info("baseline.batch_written", job=settings.job, batch=batch_id, rows=len(rows), topic=topic)

    return write_batch
