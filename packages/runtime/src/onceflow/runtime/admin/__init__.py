"""The ``Connect`` admin gRPC service: a thin adapter over a herder (its client:
:class:`onceflow.contract.clients.ConnectClient`)."""

from onceflow.runtime.admin.servicer import STATUS_CODES, ConnectServicer

__all__ = ["STATUS_CODES", "ConnectServicer"]
