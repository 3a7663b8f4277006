"""The public job API: a job is a function of a :class:`JobContext` that returns its outputs.

    from pyspark.sql import functions as F
    from onceflow.spark.api import JobContext

    def job(context: JobContext):
        events = context.access_events(["event_time_ms", "ip"])
        return context.until_end_of_input(events, "event_time", "5 seconds").groupBy("ip").count()

A job returns one DataFrame (the output ``results``) or a mapping of output names to DataFrames;
``job.toml`` binds every output to sinks (``[[outputs.<name>]]``). Run it with
``onceflow job run module:function --config job.toml``; see docs/jobs.md.
"""

from onceflow.contract import DEAD_LETTERS_OUTPUT, DEFAULT_OUTPUT
from onceflow.spark.api.context import JobContext
from onceflow.spark.api.entrypoint import JobFunction, load_entrypoint
from onceflow.spark.api.outputs import JobOutputs, outputs_of

__all__ = [
    "DEAD_LETTERS_OUTPUT",
    "DEFAULT_OUTPUT",
    "JobContext",
    "JobFunction",
    "JobOutputs",
    "load_entrypoint",
    "outputs_of",
]
