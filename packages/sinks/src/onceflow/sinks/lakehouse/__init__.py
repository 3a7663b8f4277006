"""What the lakehouse sinks (Delta Lake, Apache Iceberg) share: the participant protocol over a
:class:`TableFormat`, the store their tables live on, and their settings."""

from onceflow.sinks.lakehouse.exceptions import CommitConflict, TableStoreUnavailable
from onceflow.sinks.lakehouse.format import NO_BATCH, DataFile, TableCommit, TableFormat
from onceflow.sinks.lakehouse.participant import LakehouseParticipant
from onceflow.sinks.lakehouse.settings import CommitRetrySettings
from onceflow.sinks.lakehouse.storage import TableStore

__all__ = [
    "NO_BATCH",
    "CommitConflict",
    "CommitRetrySettings",
    "DataFile",
    "LakehouseParticipant",
    "TableCommit",
    "TableFormat",
    "TableStore",
    "TableStoreUnavailable",
]
