"""The plugin API: what a connector author implements (after Kafka Connect's ``connect-api``)."""

from onceflow.runtime.api.connector import Connector, ConnectorType, Task
from onceflow.runtime.api.sink import SinkConnector, SinkRecord, SinkTask
from onceflow.runtime.api.source import OffsetReader, SourceConnector, SourceRecord, SourceTask, SourceTaskContext

__all__ = [
    "Connector",
    "ConnectorType",
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
