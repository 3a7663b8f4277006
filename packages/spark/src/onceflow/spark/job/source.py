"""The job's source: the ``onceflow-kafka`` stream of the configured topic."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.source import INITIAL_OFFSETS_OPTION


def initial_offsets_path(settings: SparkJobSettings) -> str:
    """Where the source keeps the query's resolved initial offsets: inside the checkpoint."""
    return settings.checkpoint_location.rstrip("/") + "/onceflow/initial-offsets.json"


def source_frame(spark: SparkSession, settings: SparkJobSettings) -> DataFrame:
    """The raw Kafka records of the source topic (key, value, topic, partition, offset, timestamp)."""
    source = settings.source
    reader = (
        spark.readStream.format("onceflow-kafka")
        .option("kafka.bootstrap.servers", settings.kafka.bootstrap_servers)
        .option("subscribe", source.topic)
        .option("startingOffsets", source.starting_offsets)
        .option("isolation.level", source.isolation_level)
        .option("failOnDataLoss", str(source.fail_on_data_loss).lower())
        .option("fetchTimeoutMs", str(source.fetch_timeout_ms))
        .option("groupId", f"onceflow-spark-{settings.job}")
        .option(INITIAL_OFFSETS_OPTION, initial_offsets_path(settings))
    )
    for name, value in settings.kafka.properties.items():
        reader = reader.option(f"kafka.{name}", value)
    if source.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(source.max_offsets_per_trigger))
    return reader.load()
