"""The IP-count query: requests per IP in tumbling event-time windows, with a watermark for late events.

The plan (DESIGN.md, "The job"):

    onceflow-kafka source (read_committed, exact offset ranges)
      -> mapInArrow: decode AccessEvent values (undecodable ones go to the dead-letter topic)
      -> watermark on event time, delay = lateness; the end of a bounded input closes every window
      -> count per (window of window_ms, ip)
      -> (window_start, window_end, ip, count) to the sink
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention

from onceflow.spark.job.decode import DECODED_SCHEMA_DDL, access_event_decoder
from onceflow.spark.job.end_of_input import END_OF_INPUT_COLUMN, watermark_until_end_of_input
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.source import INITIAL_OFFSETS_OPTION

OUTPUT_COLUMNS = ("window_start", "window_end", "ip", "count")


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


def ip_counts(records: DataFrame, settings: SparkJobSettings) -> DataFrame:
    """Counts per (window, ip) of the AccessEvents in ``records``, as IpCount rows (epoch milliseconds)."""
    decoder = access_event_decoder(settings.kafka.client_config(), settings.dead_letter_topic)
    # only the columns the decoder reads (the value, and the coordinates of a dead letter)
    needed = records.select("key", "value", "topic", "partition", "offset", END_OF_INPUT_COLUMN)
    events = needed.mapInArrow(decoder, DECODED_SCHEMA_DDL).select(
        F.timestamp_millis("event_time_ms").alias("event_time"), "ip"
    )
    counts = (
        watermark_until_end_of_input(events, "event_time", f"{settings.lateness_ms} milliseconds")
        .groupBy(F.window("event_time", f"{settings.window_ms} milliseconds"), "ip")
        .count()
    )
    return counts.select(
        F.unix_millis(F.col("window.start")).alias("window_start"),
        F.unix_millis(F.col("window.end")).alias("window_end"),
        F.col("ip"),
        F.col("count").cast("long").alias("count"),
    )


def ip_count_query(spark: SparkSession, settings: SparkJobSettings) -> DataFrame:
    """The whole job's result frame: source -> decode -> watermark -> windowed counts."""
    return ip_counts(source_frame(spark, settings), settings)
