"""Closing every window at the end of a bounded input, for any job on the ``onceflow-kafka`` source.

A Spark watermark only moves when newer events arrive, so after the last line of a finished file the
last windows would stay in state for ever. Flink ends a bounded source with a final watermark; so
does onceflow: the source delivers one row with ``end_of_input = true`` once the input is complete
(see :mod:`onceflow.core.end_of_input`). A job:

1. gives that row the event time :data:`END_OF_INPUT_TIME_MS` (:func:`end_of_input_event_time`,
   or directly in its decoder);
2. puts its watermark on with :func:`watermark_until_end_of_input`, which drops the row right after
   the watermark has seen it. The filter names the event-time column, so Spark keeps it above the
   watermark (it pushes only predicates that do not reference the event time below a watermark).

The next micro-batch (Spark runs one without data when the watermark moved) then emits every window
in append mode and drops all state. The row never reaches a window, an aggregate or a sink.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812 - PySpark's convention

from onceflow.core.end_of_input import END_OF_INPUT_TIME_MS

#: The source's column that marks the end-of-input row.
END_OF_INPUT_COLUMN = "end_of_input"

__all__ = ["END_OF_INPUT_COLUMN", "END_OF_INPUT_TIME_MS", "end_of_input_event_time", "watermark_until_end_of_input"]


def end_of_input_event_time(event_time: Column) -> Column:
    """``event_time`` for the rows of the input, the end of time for the end-of-input row (step 1)."""
    return F.when(F.col(END_OF_INPUT_COLUMN), F.timestamp_millis(F.lit(END_OF_INPUT_TIME_MS))).otherwise(event_time)


def watermark_until_end_of_input(events: DataFrame, event_time: str, delay: str) -> DataFrame:
    """``events.withWatermark(event_time, delay)`` without the end-of-input row (step 2)."""
    end = F.timestamp_millis(F.lit(END_OF_INPUT_TIME_MS))
    return events.withWatermark(event_time, delay).where(F.col(event_time) < end)
