"""Results stores: stored tables' rows and consumed offsets committed in one database transaction."""

from onceflow.consumer.store.base import PartitionBatch, ResultBatch, ResultsStore, Row, TableRow
from onceflow.consumer.store.factory import open_store
from onceflow.consumer.store.postgres import PostgresResultsStore
from onceflow.consumer.store.sqlite import SqliteResultsStore

__all__ = [
    "PartitionBatch",
    "PostgresResultsStore",
    "ResultBatch",
    "ResultsStore",
    "Row",
    "SqliteResultsStore",
    "TableRow",
    "open_store",
]
