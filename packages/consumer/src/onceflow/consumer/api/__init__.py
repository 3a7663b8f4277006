"""The Results gRPC API: a thin servicer over :class:`ResultsQuery`, the change feed and the auditor."""

from onceflow.consumer.api.query import MAX_TOP_LIMIT, ResultsQuery
from onceflow.consumer.api.servicer import SERVICE_NAME, ResultsServicer

__all__ = ["MAX_TOP_LIMIT", "SERVICE_NAME", "ResultsQuery", "ResultsServicer"]
