"""The plugin API: what a connector author implements (after Kafka Connect's ``connect-api``)."""

from onceflow.runtime.api.connector import Connector, ConnectorType, Task
from onceflow.runtime.api.sink import SinkConnector, SinkRecord, SinkTask
from onceflow.runtime.api.source import (
    EndOfInput,
    OffsetReader,
    SourceConnector,
    SourceRecord,
    SourceTask,
    SourceTaskContext,
)

__all__ = [
    "END_OF_INPUT_KEY",
    "Connector",
    "ConnectorType",
    "EndOfInput",
    "OffsetReader",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SourceConnector",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Task",
]
