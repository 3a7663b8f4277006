"""The ``Connect`` admin gRPC service: a thin adapter over a herder, and a client for it."""

from onceflow.runtime.admin.client import ConnectClient
from onceflow.runtime.admin.servicer import STATUS_CODES, ConnectServicer

__all__ = ["STATUS_CODES", "ConnectClient", "ConnectServicer"]
