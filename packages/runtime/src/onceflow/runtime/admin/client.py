"""ConnectClient: the ``Connect`` stub with a deadline on every call."""

from __future__ import annotations

from typing import Any

import grpc

from onceflow.core.grpc import open_channel
from onceflow.core.settings import TlsSettings
from onceflow.proto.v1 import connect_pb2_grpc


class ConnectClient:
    """``client.call("CreateConnector", request)`` calls the RPC with the client's deadline."""

    def __init__(self, target: str, *, tls: TlsSettings | None = None, timeout: float = 60.0) -> None:
        self.target = target
        self.timeout = timeout
        self._channel = open_channel(target, tls)
        self.stub = connect_pb2_grpc.ConnectStub(self._channel)  # type: ignore[no-untyped-call]

    def call(self, method: str, request: Any) -> Any:
        return getattr(self.stub, method)(request, timeout=self.timeout)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> ConnectClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def describe_rpc_error(exc: grpc.RpcError) -> str:
    """``INVALID_ARGUMENT: invalid setting 'tasks.max': ...``"""
    code = exc.code() if isinstance(exc, grpc.Call) else None
    details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
    return f"{code.name if code else 'UNKNOWN'}: {details}"
