"""The ``access-log-generator`` connector and its exact truth."""

from onceflow.logproducer.generator.connector import SEQ_HEADER, AccessLogGeneratorConnector, AccessLogGeneratorTask
from onceflow.logproducer.generator.traffic import TrafficModel, event
from onceflow.logproducer.generator.truth import WindowCount, expected_counts

__all__ = [
    "SEQ_HEADER",
    "AccessLogGeneratorConnector",
    "AccessLogGeneratorTask",
    "TrafficModel",
    "WindowCount",
    "event",
    "expected_counts",
]
