"""The typed errors of the contract's clients: a failed call's status code turned into a meaning, here only.

Every client method raises an :class:`RpcFailed` subclass, never a bare :class:`grpc.RpcError`:

- :class:`ServiceUnavailable` (UNAVAILABLE, DEADLINE_EXCEEDED): transient, the caller may retry;
- :class:`WriterFenced` (FAILED_PRECONDITION naming fencing): another writer owns the job;
- :class:`RequestRefused` (INVALID_ARGUMENT, FAILED_PRECONDITION, NOT_FOUND, ALREADY_EXISTS,
  OUT_OF_RANGE, RESOURCE_EXHAUSTED): the service read the request and said no; retrying the same
  request does not help;
- :class:`AccessDenied` (UNAUTHENTICATED, PERMISSION_DENIED);
- :class:`CallCancelled` (CANCELLED): the call was cancelled, mostly by the caller itself;
- :class:`RpcFailed` itself for anything else (INTERNAL, UNIMPLEMENTED, UNKNOWN, ...).

Each is also a :class:`grpc.RpcError` with grpc's ``code()`` and ``details()`` accessors, so a handler
written for gRPC's own errors keeps working.
"""

from __future__ import annotations

from typing import Final

import grpc

from onceflow.core.errors import OnceflowError

#: The status the coordinator answers a fenced writer with (its details name the fencing).
_FENCED_CODE: Final = grpc.StatusCode.FAILED_PRECONDITION


class RpcFailed(OnceflowError, grpc.RpcError):  # type: ignore[misc]  # noqa: N818 - the outcome's name
    """A call to ``target`` that failed: ``method``, the status code and the service's details."""

    def __init__(self, method: str, target: str, code: grpc.StatusCode, details: str) -> None:
        self.method = method
        self.target = target
        self.status = code
        self.detail = details
        super().__init__(f"{method} at {target}: {code.name}: {details}")

    def code(self) -> grpc.StatusCode:
        """The call's status code (as :meth:`grpc.Call.code`)."""
        return self.status

    def details(self) -> str:
        """What the service said (as :meth:`grpc.Call.details`)."""
        return self.detail

    @property
    def retryable(self) -> bool:
        """True when the same call may succeed later (the service was down, busy or slow)."""
        return False


class ServiceUnavailable(RpcFailed):
    """The service could not be reached or did not answer in time (transient: retry later)."""

    @property
    def retryable(self) -> bool:
        return True


class RequestRefused(RpcFailed):
    """The service read the request and refused it; the details say why."""


class WriterFenced(RequestRefused):
    """The caller's writer epoch is fenced: another writer registered for the job since."""


class AccessDenied(RpcFailed):
    """The call was not authenticated (a missing or wrong token, no client certificate) or not allowed."""


class CallCancelled(RpcFailed):
    """The call was cancelled (by the caller, or the channel was closed under it)."""


_BY_CODE: Final[dict[grpc.StatusCode, type[RpcFailed]]] = {
    grpc.StatusCode.UNAVAILABLE: ServiceUnavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: ServiceUnavailable,
    grpc.StatusCode.INVALID_ARGUMENT: RequestRefused,
    grpc.StatusCode.FAILED_PRECONDITION: RequestRefused,
    grpc.StatusCode.NOT_FOUND: RequestRefused,
    grpc.StatusCode.ALREADY_EXISTS: RequestRefused,
    grpc.StatusCode.OUT_OF_RANGE: RequestRefused,
    grpc.StatusCode.RESOURCE_EXHAUSTED: RequestRefused,
    grpc.StatusCode.UNAUTHENTICATED: AccessDenied,
    grpc.StatusCode.PERMISSION_DENIED: AccessDenied,
    grpc.StatusCode.CANCELLED: CallCancelled,
}


def rpc_failed(exc: grpc.RpcError, method: str, target: str) -> RpcFailed:
    """The typed error of a failed call (``exc`` as gRPC raised it); an :class:`RpcFailed` is returned as is."""
    if isinstance(exc, RpcFailed):
        return exc
    code = exc.code() if isinstance(exc, grpc.Call) else grpc.StatusCode.UNKNOWN
    details = (exc.details() if isinstance(exc, grpc.Call) else None) or str(exc)
    if code == _FENCED_CODE and "fenced" in details:
        return WriterFenced(method, target, code, details)
    return _BY_CODE.get(code, RpcFailed)(method, target, code, details)
