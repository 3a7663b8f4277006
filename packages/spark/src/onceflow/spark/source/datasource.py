"""``spark.readStream.format("onceflow-kafka")``: the Kafka streaming source as a Python Data Source.

``spark.read.format("onceflow-kafka")`` reads given micro-batches' ranges again (the replay audit;
see :mod:`onceflow.spark.source.batch`).
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from onceflow.spark.source.batch import BATCH_SCHEMA, BATCHES_OPTION, batch_reader
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
        return BATCH_SCHEMA if BATCHES_OPTION in self.options else SOURCE_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return batch_reader(parse_source_options(self.options), self.options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 - Spark's API
        options = parse_source_options(self.options)
        return KafkaStreamReader(options, self.options.get(INITIAL_OFFSETS_OPTION.lower(), ""))
