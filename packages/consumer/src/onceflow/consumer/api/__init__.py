"""The Results gRPC API: a thin servicer over :class:`TableQuery` (every stored table), and the change
feed; an extension serves services of its own over the same :class:`ResultsApi`, its watches through
:func:`watch_feed`."""

from onceflow.consumer.api.servicer import SERVICE_NAME, STATUS_CODES, ResultsApi, ResultsServicer
from onceflow.consumer.api.tables import MAX_ROWS_LIMIT, RowsPage, TableInfo, TableQuery
from onceflow.consumer.api.watch import live_feed, watch_feed

__all__ = [
    "MAX_ROWS_LIMIT",
    "SERVICE_NAME",
    "STATUS_CODES",
    "ResultsApi",
    "ResultsServicer",
    "RowsPage",
    "TableInfo",
    "TableQuery",
    "live_feed",
    "watch_feed",
]
