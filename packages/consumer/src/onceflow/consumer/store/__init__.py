"""Results stores: stored tables' rows and consumed offsets committed in one database transaction."""

from onceflow.consumer.store.base import PartitionBatch, ResultBatch, ResultsStore, Row, TableRow
from onceflow.consumer.store.factory import open_store
from onceflow.consumer.store.ip_count_views import IP_COUNT_TABLE, as_result_row, as_table_row
from onceflow.consumer.store.postgres import PostgresResultsStore
from onceflow.consumer.store.sqlite import SqliteResultsStore

__all__ = [
    "IP_COUNT_TABLE",
    "PartitionBatch",
    "PostgresResultsStore",
    "ResultBatch",
    "ResultsStore",
    "Row",
    "SqliteResultsStore",
    "TableRow",
    "as_result_row",
    "as_table_row",
    "open_store",
]
