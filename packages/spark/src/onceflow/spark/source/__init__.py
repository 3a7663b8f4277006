"""The ``onceflow-kafka`` streaming source: exact offset ranges under read_committed, admission control."""

from onceflow.spark.source.datasource import INITIAL_OFFSETS_OPTION, KafkaSource
from onceflow.spark.source.offsets import rate_limit
from onceflow.spark.source.options import SourceOptions, parse_source_options
from onceflow.spark.source.ranges import OffsetRange, read_range
from onceflow.spark.source.reader import KafkaStreamReader
from onceflow.spark.source.schema import SOURCE_SCHEMA

__all__ = [
    "INITIAL_OFFSETS_OPTION",
    "SOURCE_SCHEMA",
    "KafkaSource",
    "KafkaStreamReader",
    "OffsetRange",
    "SourceOptions",
    "parse_source_options",
    "rate_limit",
    "read_range",
]
