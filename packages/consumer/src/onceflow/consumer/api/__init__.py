"""The Results gRPC API: a thin servicer over :class:`ResultsQuery` (the IP-count views),
:class:`TableQuery` (every stored table), the change feed and the auditor."""

from onceflow.consumer.api.query import MAX_TOP_LIMIT, ResultsQuery
from onceflow.consumer.api.servicer import SERVICE_NAME, ResultsServicer
from onceflow.consumer.api.tables import MAX_ROWS_LIMIT, RowsPage, TableInfo, TableQuery

__all__ = [
    "MAX_ROWS_LIMIT",
    "MAX_TOP_LIMIT",
    "SERVICE_NAME",
    "ResultsQuery",
    "ResultsServicer",
    "RowsPage",
    "TableInfo",
    "TableQuery",
]
