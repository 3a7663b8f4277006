"""``spark.readStream.format("onceflow-kafka")``: the Kafka streaming source as a Python Data Source.

With ``accessEventFields`` the stream's rows are decoded AccessEvents (:mod:`onceflow.spark.source.decoded`).
``spark.read.format("onceflow-kafka")`` reads given micro-batches' ranges again (the replay audit;
see :mod:`onceflow.spark.source.batch`).
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from onceflow.spark.source.batch import BATCH_SCHEMA, BATCHES_OPTION, batch_reader
from onceflow.spark.source.decoded import (
    DEAD_LETTERS_OPTION,
    DecodingStreamReader,
    access_event_fields,
    decoded_source_schema,
)
from onceflow.spark.source.options import parse_source_options
from onceflow.spark.source.reader import KafkaStreamReader
from onceflow.spark.source.schema import SOURCE_SCHEMA

#: Option naming the file that keeps the resolved initial offsets (the job sets it under its checkpoint).
INITIAL_OFFSETS_OPTION = "initialOffsetsPath"


class KafkaSource(DataSource):
    """Reads one Kafka topic; see :mod:`onceflow.spark.source.options` for the options."""

    @classmethod
    def name(cls) -> str:
        return "onceflow-kafka"

    def schema(self) -> StructType:
        if BATCHES_OPTION in self.options:
            return BATCH_SCHEMA
        fields = access_event_fields(self.options)
        return decoded_source_schema(fields) if fields else SOURCE_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return batch_reader(parse_source_options(self.options), self.options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 - Spark's API
        options = parse_source_options(self.options)
        initial = self.options.get(INITIAL_OFFSETS_OPTION.lower(), "")
        fields = access_event_fields(self.options)
        if fields:
            return DecodingStreamReader(options, initial, fields, self.options.get(DEAD_LETTERS_OPTION.lower(), ""))
        return KafkaStreamReader(options, initial)
