"""Traffic per (1-minute window, path, status class): several value columns, in update mode.

    onceflow job run onceflow.spark.examples.traffic:job --config services/spark-worker/jobs/traffic.toml

Every micro-batch emits the windows it changed (``output_mode = "update"``); the sinks upsert on
``(window_start, path, status_class)``, so each row ends as the window's final totals.
``params.window`` sets the window (default ``1 minute``), ``params.lateness`` the watermark delay.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention

from onceflow.spark.api import JobContext


def job(context: JobContext) -> DataFrame:
    window = str(context.params.get("window", "1 minute"))
    lateness = str(context.params.get("lateness", "10 seconds"))
    events = context.access_events(["event_time_ms", "path", "status", "bytes"])
    traffic = (
        context.until_end_of_input(events, "event_time", lateness)
        .withColumn("status_class", F.concat((F.col("status") / 100).cast("int").cast("string"), F.lit("xx")))
        .groupBy(F.window("event_time", window).alias("window"), "path", "status_class")
        .agg(F.count(F.lit(1)).alias("requests"), F.sum("bytes").alias("bytes"))
    )
    return traffic.select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "path",
        "status_class",
        F.col("requests").cast("long").alias("requests"),
        F.col("bytes").cast("long").alias("bytes"),
    )
