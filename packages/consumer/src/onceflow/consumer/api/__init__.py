"""The Results gRPC API: a thin servicer over :class:`TableQuery` (every stored table), and the change
feed; an extension serves its own RPCs with a subclass."""

from onceflow.consumer.api.servicer import SERVICE_NAME, STATUS_CODES, ResultsApi, ResultsServicer
from onceflow.consumer.api.tables import MAX_ROWS_LIMIT, RowsPage, TableInfo, TableQuery

__all__ = [
    "MAX_ROWS_LIMIT",
    "SERVICE_NAME",
    "STATUS_CODES",
    "ResultsApi",
    "ResultsServicer",
    "RowsPage",
    "TableInfo",
    "TableQuery",
]
