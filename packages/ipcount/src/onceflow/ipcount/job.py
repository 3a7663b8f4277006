"""The IP-count job: requests per ip in tumbling event-time windows, with a watermark for late events.

    onceflow job run onceflow.ipcount.job:job --config services/spark-worker/spark-worker.toml

Plan: source (read_committed, exact offset ranges) -> decode AccessEvents (undecodable ones are the
``dead_letters`` side output) -> watermark on event time, delay = ``params.lateness_ms``; the end of a
bounded input closes every window -> count per (window of ``params.window_ms``, ip) ->
``(window_start, window_end, ip, count)``, window bounds in epoch milliseconds (the IpCount record).

Its ``[params]``: ``window_ms`` (default 5000) and ``lateness_ms`` (default 5000); a bad one is an
``InvalidConfig`` naming ``params.<name>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention

from onceflow.core import defaults
from onceflow.core.errors import InvalidConfig
from onceflow.spark.api import JobContext

#: The output's columns: the IpCount record's fields.
OUTPUT_COLUMNS = ("window_start", "window_end", "ip", "count")


def job(context: JobContext) -> DataFrame:
    """Counts per (window, ip) of the AccessEvents of the source topic."""
    return count_per_window(context, context.access_events(["event_time_ms", "ip"]))


def count_per_window(context: JobContext, events: DataFrame) -> DataFrame:
    """The IP-count output of decoded ``events`` (``event_time`` and ``ip``): the job after its decoder."""
    window_ms, lateness_ms = windowing(context.params)
    counts = (
        context.until_end_of_input(events, "event_time", f"{lateness_ms} milliseconds")
        .groupBy(F.window("event_time", f"{window_ms} milliseconds"), "ip")
        .count()
    )
    return counts.select(
        _required(F.unix_millis(F.col("window.start")), 0).alias("window_start"),
        _required(F.unix_millis(F.col("window.end")), 0).alias("window_end"),
        _required(F.col("ip"), "").alias("ip"),
        _required(F.col("count").cast("long"), 0).alias("count"),
    )


def windowing(params: Mapping[str, Any]) -> tuple[int, int]:
    """``(window_ms, lateness_ms)`` of the job's ``[params]`` (5000 each by default)."""
    return (
        _param(params, "window_ms", defaults.WINDOW_MS, least=1),
        _param(params, "lateness_ms", defaults.ALLOWED_LATENESS_MS, least=0),
    )


def _param(params: Mapping[str, Any], name: str, default: int, *, least: int) -> int:
    """The integer ``params.<name>`` (``default`` when absent), at least ``least``."""
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidConfig(f"params.{name}", f"must be an integer >= {least}, got {value!r}")
    return value


def _required(column: Column, never: object) -> Column:
    """``column``, typed NOT NULL. The IpCount record's four fields are required, but Spark types every
    column out of a stateful operator as nullable; none is ever null here (``never`` is never used).
    The Avro writer schema of a Kafka binding is then exactly IpCount, which every IpCount reader decodes.
    """
    return F.coalesce(column, F.lit(never))
