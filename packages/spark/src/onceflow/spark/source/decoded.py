"""The ``onceflow-kafka`` source handing Spark decoded AccessEvents, in the pass that reads the records.

With the option ``accessEventFields`` (``event_time_ms,ip``, ...) the stream's rows are those fields of
each AccessEvent value (:func:`onceflow.spark.job.decode.decoded_schema_ddl`), not the raw records:
the task that reads a range decodes its Arrow batches before handing them to Spark. That is the
same work as the ``mapInArrow`` decoder on the raw records, without moving every raw record from
the reading Python worker into the JVM and back out to a second Python worker.

A task (:meth:`DecodingStreamReader.read`):

    1. reads its range exactly as the raw source does (:func:`~onceflow.spark.source.ranges.read_range`);
    2. decodes each batch (:func:`~onceflow.spark.job.decode.decode_batch`); the end-of-input row
       passes with the end of time as its event time;
    3. hands the undecodable records to its dead-letter sink (``deadLetters``: staged as the batch's
       ``dead_letters`` side output, or published to a topic), which it closes before its last batch
       is handed on, so a task only succeeds once its rejected records are staged or acknowledged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import DataType, IntegerType, LongType, StringType, StructField, StructType

from onceflow.spark.source.options import SourceOptions
from onceflow.spark.source.reader import KafkaStreamReader
from onceflow.spark.worker_logging import ensure_worker_logging

#: Comma-separated AccessEvent fields: the source decodes the values into these columns.
ACCESS_EVENT_FIELDS_OPTION = "accessEventFields"
#: Where the undecodable records go, JSON: ``{"staging_root": ..., "job": ...}`` (staged side output)
#: or ``{"topic": ...}`` (published with the source's Kafka client settings).
DEAD_LETTERS_OPTION = "deadLetters"

_SPARK_TYPES: dict[str, DataType] = {"long": LongType(), "string": StringType(), "int": IntegerType()}


def access_event_fields(options: Mapping[str, str]) -> list[str]:
    """The fields the source decodes (empty: it hands Spark the raw records)."""
    raw = options.get(ACCESS_EVENT_FIELDS_OPTION.lower(), options.get(ACCESS_EVENT_FIELDS_OPTION, ""))
    return [f.strip() for f in raw.split(",") if f.strip()]


def decoded_source_schema(fields: Sequence[str]) -> StructType:
    """The stream's schema in decoding mode: the fields, every one NOT NULL (an AccessEvent's are required)."""
    from onceflow.spark.job.decode import decoded_schema_ddl

    columns = [column.rsplit(" ", 3) for column in decoded_schema_ddl(fields).split(", ")]
    return StructType([StructField(name, _SPARK_TYPES[kind], False) for name, kind, _, _ in columns])


class DecodingStreamReader(KafkaStreamReader):
    """:class:`KafkaStreamReader` whose tasks decode AccessEvents (see the module docstring)."""

    def __init__(
        self, options: SourceOptions, initial_offsets_path: str, fields: Sequence[str], dead_letters: str
    ) -> None:
        super().__init__(options, initial_offsets_path)
        self.fields = tuple(fields)
        self.dead_letters = dead_letters
        self._destination()  # fail on the driver, at planning, for a bad option

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "fields": self.fields, "dead_letters": self.dead_letters}

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self.fields = state["fields"]
        self.dead_letters = state["dead_letters"]

    def _destination(self) -> dict[str, str]:
        try:
            destination = json.loads(self.dead_letters)
        except ValueError:
            destination = None
        if not isinstance(destination, dict) or not (
            set(destination) == {"topic"} or set(destination) == {"staging_root", "job"}
        ):
            raise ValueError(
                f"option {DEAD_LETTERS_OPTION}: expected JSON {{'topic': ...}} or {{'staging_root': ..., 'job': ...}}, "
                f"got {self.dead_letters!r}"
            )
        return {str(k): str(v) for k, v in destination.items()}

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from onceflow.spark.job.dead_letters import DeadLetterPublisher, DeadLetterSink, StagedDeadLetters
        from onceflow.spark.job.decode import decode_batch, decoded_schema

        ensure_worker_logging()
        # Spark checks a data source's batches against its schema, nullability included
        schema = pa.schema([field.with_nullable(False) for field in decoded_schema(self.fields)])
        destination = self._destination()
        sink: DeadLetterSink
        if "topic" in destination:
            sink = DeadLetterPublisher(self.options.client_config(), destination["topic"])
        else:
            sink = StagedDeadLetters(destination["staging_root"], destination["job"])
        # Step 1
        for batch in super().read(partition):
            # Step 2
            decoded, dead = decode_batch(batch, self.fields)
            # Step 3
            sink.add(dead)
            if decoded.num_rows:
                yield pa.RecordBatch.from_arrays(decoded.columns, schema=schema)
        sink.close()
