"""The ``onceflow-2pc`` streaming sink: staged Arrow IPC files per task, two-phase commit per micro-batch."""

from onceflow.spark.sink.datasource import TwoPhaseCommitSink
from onceflow.spark.sink.messages import StagedFileMessage
from onceflow.spark.sink.options import SinkOptions, parse_sink_options
from onceflow.spark.sink.writer import TwoPhaseCommitBatchWriter, TwoPhaseCommitWriter

__all__ = [
    "SinkOptions",
    "StagedFileMessage",
    "TwoPhaseCommitBatchWriter",
    "TwoPhaseCommitSink",
    "TwoPhaseCommitWriter",
    "parse_sink_options",
]
