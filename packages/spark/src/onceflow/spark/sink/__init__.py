"""The ``onceflow-2pc`` streaming sink: staged Avro files per task, two-phase commit per micro-batch."""

from onceflow.spark.sink.coordinator import CoordinatorClient, Participant, Registration
from onceflow.spark.sink.datasource import TwoPhaseCommitSink
from onceflow.spark.sink.messages import StagedFileMessage
from onceflow.spark.sink.options import SinkOptions, parse_sink_options
from onceflow.spark.sink.writer import TwoPhaseCommitBatchWriter, TwoPhaseCommitWriter

__all__ = [
    "CoordinatorClient",
    "Participant",
    "Registration",
    "SinkOptions",
    "StagedFileMessage",
    "TwoPhaseCommitBatchWriter",
    "TwoPhaseCommitSink",
    "TwoPhaseCommitWriter",
    "parse_sink_options",
]
