"""The IP-count job: requests per ip in tumbling event-time windows, with a watermark for late events.

    onceflow job run onceflow.spark.examples.ip_count:job --config services/spark-worker/spark-worker.toml

Plan: source (read_committed, exact offset ranges) -> decode AccessEvents (undecodable ones are the
``dead_letters`` side output) -> watermark on event time, delay = ``lateness_ms``; the end of a
bounded input closes every window -> count per (window of ``window_ms``, ip) ->
``(window_start, window_end, ip, count)``: epoch milliseconds, all non-null (the IpCount record).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention
from pyspark.sql.types import LongType, StringType, StructField, StructType

from onceflow.spark.api import JobContext

#: The output's schema: the IpCount record (io.onceflow.v1.IpCount), every column non-null.
OUTPUT_SCHEMA = StructType(
    [
        StructField("window_start", LongType(), nullable=False),
        StructField("window_end", LongType(), nullable=False),
        StructField("ip", StringType(), nullable=False),
        StructField("count", LongType(), nullable=False),
    ]
)
OUTPUT_COLUMNS = tuple(OUTPUT_SCHEMA.fieldNames())


def job(context: JobContext) -> DataFrame:
    """Counts per (window, ip) of the AccessEvents of the source topic."""
    settings = context.settings
    events = context.access_events(["event_time_ms", "ip"])
    counts = (
        context.until_end_of_input(events, "event_time", f"{settings.lateness_ms} milliseconds")
        .groupBy(F.window("event_time", f"{settings.window_ms} milliseconds"), "ip")
        .count()
    )
    return counts.select(
        F.unix_millis(F.col("window.start")).alias("window_start"),
        F.unix_millis(F.col("window.end")).alias("window_end"),
        F.col("ip"),
        F.col("count").cast("long").alias("count"),
    ).to(OUTPUT_SCHEMA)
