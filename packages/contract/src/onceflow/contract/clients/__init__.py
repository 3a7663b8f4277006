"""Typed clients of onceflow's gRPC services: the one place their stubs are built.

Each takes a target and the :class:`~onceflow.core.settings.TlsSettings` (TLS, mTLS, bearer token:
:func:`onceflow.core.grpc.open_channel`), has one method per RPC with a per-call deadline, raises a
typed error for a failed call (:mod:`~onceflow.contract.clients.errors`), and is closed with
``close()`` or ``with``.
"""

from onceflow.contract.clients.base import ClientClosed, ServiceClient, UnusableClientArgument, retrying
from onceflow.contract.clients.connect import ConnectClient
from onceflow.contract.clients.coordinator import CoordinatorClient, WriterRegistration
from onceflow.contract.clients.errors import (
    AccessDenied,
    CallCancelled,
    RequestRefused,
    RpcFailed,
    ServiceUnavailable,
    WriterFenced,
)
from onceflow.contract.clients.participant import ParticipantClient
from onceflow.contract.clients.results import ResultsClient

__all__ = [
    "AccessDenied",
    "CallCancelled",
    "ClientClosed",
    "ConnectClient",
    "CoordinatorClient",
    "ParticipantClient",
    "RequestRefused",
    "ResultsClient",
    "RpcFailed",
    "ServiceClient",
    "ServiceUnavailable",
    "UnusableClientArgument",
    "WriterFenced",
    "WriterRegistration",
    "retrying",
]
