"""The ``access-log-generator`` connector (its traffic model and truth live in :mod:`onceflow.ipcount.traffic`)."""

from onceflow.ipcount.traffic import TrafficModel, WindowCount, event, expected_counts
from onceflow.logproducer.generator.connector import SEQ_HEADER, AccessLogGeneratorConnector, AccessLogGeneratorTask

__all__ = [
    "SEQ_HEADER",
    "AccessLogGeneratorConnector",
    "AccessLogGeneratorTask",
    "TrafficModel",
    "WindowCount",
    "event",
    "expected_counts",
]
