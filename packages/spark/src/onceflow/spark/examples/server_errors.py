"""Every 5xx request, enriched, appended: a stateless job in append mode with no natural key.

    onceflow job run onceflow.spark.examples.server_errors:job --config services/spark-worker/jobs/server-errors.toml

Two requests can be identical in every column, so no key can tell a replayed row from a new one.
The sinks append (``mode = "append"``); a replayed micro-batch is recognised by its transaction id,
which every sink records in the same transaction as the rows, so no row is added twice.

It has two outputs: ``results`` (every 5xx) and ``bot_errors`` (those a crawler met, a function of
each micro-batch of ``results``). Both outputs of a micro-batch commit in one transaction.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention

from onceflow.spark.api import JobContext


def job(context: JobContext) -> dict[str, Any]:
    events = context.access_events(["event_time_ms", "ip", "method", "path", "status", "bytes", "user_agent"])
    errors = events.where(F.col("status") >= 500)  # the end-of-input row (status 0) goes too
    results = errors.select(
        "event_time",
        "ip",
        "method",
        "path",
        "status",
        "bytes",
        F.when(F.col("status") == 503, "unavailable")
        .when(F.col("status") == 504, "timeout")
        .otherwise("error")
        .alias("kind"),
        (F.col("user_agent").rlike("(?i)bot|crawler|spider")).alias("from_bot"),
    )
    return {"results": results, "bot_errors": bot_errors}


def bot_errors(batch: DataFrame) -> DataFrame:
    """The server errors crawlers met, in a micro-batch of ``results``: when, where, and which status."""
    return batch.where(F.col("from_bot")).select("event_time", "ip", "path", "status")
