"""Typed clients of the coordinator and the participants: the one place their stubs are built.

Each takes a target and the :class:`~onceflow.core.settings.TlsSettings` (TLS, mTLS, bearer token:
:func:`onceflow.core.grpc.open_channel`), has one method per RPC with a per-call deadline, and is
closed with ``close()`` or ``with``.
"""

from onceflow.core.contract.clients.base import ServiceClient
from onceflow.core.contract.clients.coordinator import CoordinatorClient
from onceflow.core.contract.clients.participant import ParticipantClient

__all__ = ["CoordinatorClient", "ParticipantClient", "ServiceClient"]
