"""The typed client of ``onceflow.v1.Connect`` (connect.proto), the connector runtime's admin API."""

from __future__ import annotations

from typing import Any, Final

from google.protobuf.message import Message

from onceflow.core.contract.clients.base import ServiceClient
from onceflow.core.settings import TlsSettings
from onceflow.proto.v1 import connect_pb2, connect_pb2_grpc

#: The Connect RPCs, by name (connect.proto).
CONNECT_METHODS: Final = frozenset(connect_pb2.DESCRIPTOR.services_by_name["Connect"].methods_by_name)


class ConnectClient(ServiceClient):
    """Calls on a connect worker at ``target``: ``client.call("CreateConnector", request)`` sends the
    ``onceflow.v1`` request message with a deadline (``timeout_s`` per call, or the client's) and
    answers the response message, as the ``onceflow connect`` command maps its sub-commands onto
    the RPCs (Kafka Connect's REST API, over gRPC). A failed call raises its typed error
    (:mod:`~onceflow.core.contract.clients.errors`); a method that is not a Connect RPC is a ValueError.
    """

    def __init__(self, target: str, tls: TlsSettings | None = None, *, timeout_s: float = 60.0) -> None:
        super().__init__(target, tls, timeout_s=timeout_s)
        self._stub = connect_pb2_grpc.ConnectStub(self.channel)  # type: ignore[no-untyped-call]

    def call(self, method: str, request: Message, *, timeout_s: float | None = None) -> Any:
        """The answer of the Connect RPC ``method`` to ``request``."""
        if method not in CONNECT_METHODS:
            raise ValueError(f"{method!r} is not a Connect RPC (one of {', '.join(sorted(CONNECT_METHODS))})")
        return self._unary(self._stub, method, request, timeout_s)
