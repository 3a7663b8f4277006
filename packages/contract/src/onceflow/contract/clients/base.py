"""What every typed client of a onceflow service shares: its channel, its per-call deadline, the one
place a failed call becomes a typed error (:func:`~onceflow.contract.clients.errors.rpc_failed`),
close(), and :meth:`ServiceClient.shared`, one open client per process for callers that call often."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Generator
from types import TracebackType
from typing import Any, ClassVar, Generic, Self, TypeVar, cast

import grpc

from onceflow.contract.clients.errors import CallCancelled, RpcFailed, rpc_failed
from onceflow.contract.txn import TransactionId
from onceflow.core.errors import OnceflowError
from onceflow.core.grpc import open_channel
from onceflow.core.logging import get_logger
from onceflow.core.settings import TlsSettings

T = TypeVar("T")
#: The generated stub type of a client's service (``onceflow.proto.v1.*_pb2_grpc.*Stub``).
StubT = TypeVar("StubT")
_log = get_logger(__name__)
#: The clients :meth:`ServiceClient.shared` keeps open, by class, target and TLS settings.
_shared: dict[tuple[type[Any], str, TlsSettings | None], tuple[tuple[object, ...], Any]] = {}
_shared_lock = threading.Lock()
#: Shared clients a forked child inherited from its parent: kept, so that their channels are not torn
#: down in the child (grpcio does not support using or closing a parent's channel after a fork).
_inherited: list[Any] = []


class UnusableClientArgument(OnceflowError, ValueError):  # noqa: N818 - the condition's name
    """A client's target or deadline that cannot be used (a ValueError; an onceflow error, so the
    command line reports it as one)."""


class ClientClosed(OnceflowError, RuntimeError):  # noqa: N818 - the condition's name
    """A call on a client after its close()."""


class ServiceClient(Generic[StubT]):
    """A channel to one service target (TLS, mTLS and the bearer token as :func:`open_channel` sets them
    up), the stub of its service on it, and a default deadline for its calls. Close it, or use
    ``with``, to release the channel.

    A subclass names its service's generated stub class (:attr:`stub_class`) and, when its calls
    take longer, its default deadline (:attr:`default_timeout_s`). A failed call raises the typed
    error of its status (:mod:`onceflow.contract.clients.errors`). :class:`UnusableClientArgument` (a
    ValueError) for an empty target or a deadline that is not a positive number of seconds;
    :class:`ClientClosed` for a call after close().
    """

    #: The generated stub class of the service (``XStub``), built on the channel.
    stub_class: ClassVar[type[Any]]
    #: The deadline of a call when neither the call nor the client's ``timeout_s`` names one.
    default_timeout_s: ClassVar[float] = 30.0

    def __init__(self, target: str, tls: TlsSettings | None = None, *, timeout_s: float | None = None) -> None:
        if not target:
            raise UnusableClientArgument("target must be HOST:PORT, got an empty string")
        self.target = target
        self.timeout_s = _checked_timeout(self.default_timeout_s if timeout_s is None else timeout_s)
        self.channel: grpc.Channel = open_channel(target, tls)
        self._stub = cast(StubT, self.stub_class(self.channel))
        self._closed = False

    @classmethod
    def shared(cls, target: str, tls: TlsSettings | None = None) -> Self:
        """This process's open client of ``target``, opened at the first call: for a caller that calls
        often (a Spark driver's commit, once per micro-batch), so that each call does not pay a new
        channel's connection (and TLS handshake). Do not close it; pass each call's deadline.

        Steps:
            1. The key is the class, ``target`` and ``tls``; the client is stamped with the process id
               and the size and modification time of every file ``tls`` names (a token, a CA, a
               certificate, a key).
            2. A client of the same key and stamp is returned as it is: its channel reconnects by
               itself after the service restarts.
            3. Otherwise (the first call; a forked child, which must not use its parent's channel; a
               rotated token or certificate) a new client is opened and kept. One it replaces is not
               closed: a caller may still hold it (a call on a closed intercepted channel crashes
               grpcio), and its channel closes when the last reference goes; a parent's, in a
               forked child, is kept for the child's life and never touched.
        """
        # Step 1
        key = (cls, target, tls)
        stamp = (_process_id(), *_file_stamps(tls))
        with _shared_lock:
            # Step 2
            kept = _shared.get(key)
            if kept is not None and kept[0] == stamp:
                return cast(Self, kept[1])
            # Step 3
            client = cls(target, tls)
            _shared[key] = (stamp, client)
            if kept is not None and kept[0][0] != stamp[0]:
                _inherited.append(kept[1])  # a parent's: never closed nor collected in this child
        return client

    @property
    def stub(self) -> StubT:
        """The raw stub on this client's channel, for tests that send requests the methods would not build."""
        return self._stub

    def _timeout(self, timeout_s: float | None) -> float:
        """The deadline of one call: ``timeout_s`` when given, the client's default otherwise."""
        return self.timeout_s if timeout_s is None else _checked_timeout(timeout_s)

    def _check_open(self, method: str) -> None:
        """ClientClosed for a call after close(): grpcio crashes the process on a call on a closed
        channel that carries a bearer token, so no call reaches one."""
        if self._closed:
            raise ClientClosed(f"{method}: the client of {self.target} is closed")

    def _unary(self, stub: Any, method: str, request: Any, timeout_s: float | None) -> Any:
        """``stub.method(request)`` with the call's deadline; a failure is raised as its typed error."""
        self._check_open(method)
        try:
            return getattr(stub, method)(request, timeout=self._timeout(timeout_s))
        except grpc.RpcError as exc:
            raise rpc_failed(exc, method, self.target) from None

    def _stream(self, stub: Any, method: str, request: Any) -> Generator[Any, None, None]:
        """The responses of the server-streaming ``stub.method(request)`` (no deadline: it runs until the
        caller stops). Closing the iterator cancels the call; a failure is raised as its typed error,
        except the cancellation the caller asked for."""
        self._check_open(method)
        call = getattr(stub, method)(request)
        try:
            yield from call
        except grpc.RpcError as exc:
            failed = rpc_failed(exc, method, self.target)
            if not isinstance(failed, CallCancelled):
                raise failed from None
        finally:
            call.cancel()

    @staticmethod
    def _converted(stream: Generator[Any, None, None], convert: Callable[[Any], T]) -> Generator[T, None, None]:
        """``stream``'s messages as contract values; closing this closes (cancels) ``stream``."""
        try:
            for message in stream:
                yield convert(message)
        finally:
            stream.close()

    def close(self) -> None:
        self._closed = True
        self.channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _process_id() -> int:
    return os.getpid()


def _file_stamps(tls: TlsSettings | None) -> list[tuple[int, int] | None]:
    """(size, modification time) of each file ``tls`` names, None for one that cannot be read."""
    stamps: list[tuple[int, int] | None] = []
    for path in (tls.ca, tls.cert, tls.key, tls.token_file) if tls is not None else ():
        try:
            status = os.stat(path) if path else None
        except OSError:
            status = None
        stamps.append(None if status is None else (status.st_size, status.st_mtime_ns))
    return stamps


def _checked_timeout(timeout_s: float) -> float:
    if not isinstance(timeout_s, int | float) or not math.isfinite(timeout_s) or timeout_s <= 0:
        raise UnusableClientArgument(f"timeout must be a positive number of seconds, got {timeout_s!r}")
    return float(timeout_s)


def retrying(call: Callable[[], T], *, within_s: float, what: str, **ids: object) -> T:
    """``call()``, retried with a doubling backoff (0.1 s up to 2 s) while it fails with a retryable
    error (:class:`ServiceUnavailable`) and ``within_s`` seconds are not used up; then the last error.
    Only for calls that are idempotent (RegisterWriter, CommitTransaction per batch, reads)."""
    deadline = time.monotonic() + within_s
    delay = 0.1
    while True:
        try:
            return call()
        except RpcFailed as exc:
            if not exc.retryable or time.monotonic() + delay > deadline:
                raise
            _log.warning("rpc.retrying", operation=what, target=exc.target, code=exc.code().name, **ids)
        time.sleep(delay)
        delay = min(delay * 2, 2.0)


def check_txn(txn: object) -> None:
    """TypeError unless ``txn`` is a :class:`TransactionId` (a string "job:batch" is a common slip)."""
    if not isinstance(txn, TransactionId):
        raise TypeError(
            f"txn must be a TransactionId, got {txn!r} ({type(txn).__name__}); use TransactionId.parse('JOB:BATCH')"
        )
