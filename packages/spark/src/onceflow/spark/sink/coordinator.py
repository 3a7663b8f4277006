"""The Spark driver's calls on the TransactionCoordinator, over the contract's typed client
(:class:`onceflow.core.contract.clients.CoordinatorClient`), with retries and its errors turned into meanings.

- FAILED_PRECONDITION naming fencing -> :class:`WriterFencedError` (another driver owns the job);
- ABORTED outcome -> the caller decides (the sink raises :class:`TransactionAborted`);
- anything else that fails -> :class:`CoordinatorUnavailable`, naming the call and the status.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import grpc

from onceflow.core.contract import ParticipantRef, TransactionId, TransactionState, clients
from onceflow.core.contract.proto import state_to_proto
from onceflow.core.logging import get_logger
from onceflow.core.settings import TlsSettings
from onceflow.core.staging import StagedFile
from onceflow.spark.exceptions import CoordinatorUnavailable, JobDefinitionError, WriterFencedError

T = TypeVar("T")
_log = get_logger(__name__)

#: Answers of CommitTransaction that mean "the batch is committed". COMMITTING is the logged decision
#: with commit acks still being delivered: final, so the writer treats it as committed.
COMMITTED_STATES = frozenset(state_to_proto(state) for state in TransactionState if state.is_commit)
_RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}
#: RegisterParticipants answers these when a binding does not fit a sink (a table's column, a type).
_REFUSED = {grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT}


#: A sink (connection) of a participant server, its gRPC target, and what the job writes there
#: (no bindings: the sink's default, the IP-count results): the contract's participant ref.
Participant = ParticipantRef


@dataclass(frozen=True)
class Registration:
    """What RegisterWriter answered: this driver's epoch and the job's last committed batch (-1: none)."""

    epoch: int
    last_committed_batch: int


class CoordinatorClient:
    """Calls of a Spark driver on the coordinator. Close it (or use ``with``) to release the channel."""

    def __init__(self, target: str, tls: TlsSettings | None = None, *, timeout_s: float = 120.0) -> None:
        self.target = target
        self._timeout_s = timeout_s
        self._rpc = clients.CoordinatorClient(target, tls, timeout_s=timeout_s)

    def close(self) -> None:
        self._rpc.close()

    def __enter__(self) -> CoordinatorClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _error(self, exc: grpc.RpcError, operation: str, job: str, epoch: int) -> Exception:
        code: grpc.StatusCode = exc.code()
        details = str(exc.details())
        if code == grpc.StatusCode.FAILED_PRECONDITION and "fenced" in details:
            return WriterFencedError(job, epoch, details)
        if operation == "RegisterParticipants" and code in _REFUSED:
            return JobDefinitionError(job, details)
        return CoordinatorUnavailable(operation, job, f"{code.name}: {details} (coordinator {self.target})")

    def _call(self, operation: str, job: str, epoch: int, call: Callable[[], T]) -> T:
        try:
            return call()
        except grpc.RpcError as exc:
            raise self._error(exc, operation, job, epoch) from None

    def register_writer(self, job: str, writer_id: str, *, deadline_s: float = 60.0) -> Registration:
        """Become the job's writer: a new epoch that fences every earlier writer. Retries while unreachable."""
        response = self._retrying(
            "RegisterWriter", job, deadline_s, lambda: self._rpc.register_writer(job, writer_id, timeout_s=10)
        )
        return Registration(epoch=int(response.epoch), last_committed_batch=int(response.last_committed_batch))

    def register_participants(
        self, job: str, epoch: int, participants: Sequence[Participant], *, deadline_s: float = 60.0
    ) -> None:
        """Declare the job's sink participants (replacing the previous list)."""
        self._retrying(
            "RegisterParticipants",
            job,
            deadline_s,
            lambda: self._rpc.register_participants(job, epoch, participants, timeout_s=10),
        )

    def commit_transaction(self, job: str, epoch: int, batch: int, files: Sequence[StagedFile]) -> tuple[int, str]:
        """Run 2PC for ``<job>:<batch>``; returns ``(state, reason)``.

        CommitTransaction is idempotent per batch (a committed batch answers COMMITTED, an attempt
        under way is joined), so a call that failed with UNAVAILABLE or DEADLINE_EXCEEDED (the
        coordinator restarting, say) is retried until the RPC timeout is used up.
        """
        txn = TransactionId(job, batch)
        deadline = time.monotonic() + self._timeout_s
        response = self._retrying(
            "CommitTransaction",
            job,
            self._timeout_s,
            lambda: self._rpc.commit_transaction(txn, epoch, files, timeout_s=max(1.0, deadline - time.monotonic())),
            epoch=epoch,
        )
        return int(response.state), str(response.reason)

    def abort_transaction(self, job: str, epoch: int, batch: int, reason: str) -> int:
        """Abort ``<job>:<batch>`` unless it reached its commit point; returns the transaction's state."""
        txn = TransactionId(job, batch)
        response = self._call("AbortTransaction", job, epoch, lambda: self._rpc.abort_transaction(txn, epoch, reason))
        return int(response.state)

    def _retrying(self, operation: str, job: str, deadline_s: float, call: Callable[[], T], *, epoch: int = 0) -> T:
        deadline = time.monotonic() + deadline_s
        delay = 0.1
        while True:
            try:
                return call()
            except grpc.RpcError as exc:
                if exc.code() not in _RETRYABLE or time.monotonic() + delay > deadline:
                    raise self._error(exc, operation, job, epoch) from None
                _log.warning("coordinator.retrying", operation=operation, job=job, epoch=epoch, code=exc.code().name)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
