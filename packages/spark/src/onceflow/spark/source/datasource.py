"""``spark.readStream.format("onceflow-kafka")``: the Kafka streaming source as a Python Data Source."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamReader
from pyspark.sql.types import StructType

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
        return SOURCE_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 - Spark's API
        options = parse_source_options(self.options)
        return KafkaStreamReader(options, self.options.get(INITIAL_OFFSETS_OPTION.lower(), ""))
