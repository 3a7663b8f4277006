"""The typed client of ``onceflow.v1.TransactionCoordinator`` (coordinator.proto): one method per RPC,
failing over between an active coordinator and its standbys."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from onceflow.contract.clients.base import ServiceClient, UnusableClientArgument, check_txn
from onceflow.contract.clients.errors import RpcFailed, rpc_failed
from onceflow.contract.participant_ref import ParticipantRef
from onceflow.contract.proto import (
    bindings_to_proto,
    files_to_proto,
    outcome_from_proto,
    report_from_proto,
    resolution_to_proto,
    shard_to_proto,
    state_to_proto,
)
from onceflow.contract.report import TransactionOutcome, TransactionReport
from onceflow.contract.staging import StagedFile
from onceflow.contract.state import Resolution, TransactionState
from onceflow.contract.txn import TransactionId
from onceflow.core.grpc import open_channel
from onceflow.core.settings import TlsSettings
from onceflow.proto.v1 import coordinator_pb2, coordinator_pb2_grpc


def split_targets(target: str) -> list[str]:
    """``HOST:PORT[,HOST:PORT...]`` as a list; ValueError for an empty entry."""
    targets = [part.strip() for part in target.split(",")]
    if not all(targets):
        raise UnusableClientArgument(f"coordinator targets must be HOST:PORT[,HOST:PORT...], got {target!r}")
    return targets


@dataclass(frozen=True, slots=True)
class WriterRegistration:
    """What RegisterWriter answers: the writer's new epoch (it fences every earlier writer of the job)
    and the job's last committed batch (-1: none)."""

    epoch: int
    last_committed_batch: int


class CoordinatorClient(ServiceClient[coordinator_pb2_grpc.TransactionCoordinatorStub]):
    """Calls on the coordinators at ``target``, each with a deadline (``timeout_s`` per call, or the client's).

    ``target`` names one coordinator, or an active one and its standbys, comma-separated
    (``host1:7100,host2:7100``). A call goes to the one that answered last; an UNAVAILABLE answer
    (a standby, a stopped or unreachable instance) sends it on to the next, once round the list,
    within the call's deadline. Only then does the call fail, with the last UNAVAILABLE: while no
    instance is active (a take-over), callers retry as they do for one coordinator. A call that
    runs out of time (DEADLINE_EXCEEDED: a hung instance) fails, and the next call starts at the
    next coordinator.

    Arguments are the contract's values (:class:`TransactionId`, :class:`StagedFile`,
    :class:`ParticipantRef`, :class:`TransactionState`, :class:`Resolution`), and so are the answers
    (:mod:`~onceflow.contract.report`): RegisterWriter answers a :class:`WriterRegistration`,
    Commit-, Abort- and ResolveTransaction a :class:`TransactionOutcome`, Get- and ListTransactions
    :class:`TransactionReport` s; no ``onceflow.v1`` message leaves this class. A failed call
    raises its typed error (:mod:`~onceflow.contract.clients.errors`: a fenced writer is
    :class:`WriterFenced`, a refusal :class:`RequestRefused` whose details say what was refused).
    A transaction id that is not a :class:`TransactionId` is a TypeError before anything is sent.
    """

    stub_class = coordinator_pb2_grpc.TransactionCoordinatorStub

    def __init__(self, target: str, tls: TlsSettings | None = None, *, timeout_s: float | None = None) -> None:
        targets = split_targets(target) if target else [target]
        super().__init__(targets[0], tls, timeout_s=timeout_s)
        self.target = target
        self.targets = targets
        self._channels = [self.channel, *(open_channel(other, tls) for other in targets[1:])]
        self._stubs = [self._stub, *(self.stub_class(channel) for channel in self._channels[1:])]  # type: ignore[no-untyped-call]
        self._lock = threading.Lock()
        self._current = 0

    @property
    def stub(self) -> coordinator_pb2_grpc.TransactionCoordinatorStub:
        """The raw stub of the coordinator that answered last, for tests that send requests the
        methods would not build (no fail-over)."""
        with self._lock:
            return self._stubs[self._current]

    def close(self) -> None:
        self._closed = True
        for channel in self._channels:
            channel.close()

    def _call(self, method: str, request: Any, timeout_s: float | None) -> Any:
        """``method`` on the coordinator that answered last, then on the others while they answer UNAVAILABLE."""
        self._check_open(method)
        deadline = time.monotonic() + self._timeout(timeout_s)
        with self._lock:
            first = self._current
        failure: RpcFailed | None = None
        for step in range(len(self._stubs)):
            index = (first + step) % len(self._stubs)
            remaining = deadline - time.monotonic()
            if remaining <= 0 and failure is not None:
                break
            try:
                response = getattr(self._stubs[index], method)(request, timeout=max(remaining, 0.001))
            except grpc.RpcError as exc:
                failed = rpc_failed(exc, method, self.targets[index])
                code = failed.code()
                if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                    with self._lock:
                        if self._current == index:
                            self._current = (index + 1) % len(self._stubs)
                if code != grpc.StatusCode.UNAVAILABLE:
                    raise failed from None
                failure = failed
                continue
            with self._lock:
                self._current = index
            return response
        assert failure is not None
        raise failure from None

    def register_writer(self, job: str, writer_id: str, *, timeout_s: float | None = None) -> WriterRegistration:
        """Become ``job``'s writer: the answer's ``epoch`` fences every earlier writer; it also carries
        the job's ``last_committed_batch`` (-1: none)."""
        request = coordinator_pb2.RegisterWriterRequest(job=job, writer_id=writer_id)
        response: coordinator_pb2.RegisterWriterResponse = self._call("RegisterWriter", request, timeout_s)
        return WriterRegistration(epoch=int(response.epoch), last_committed_batch=int(response.last_committed_batch))

    def register_participants(
        self, job: str, epoch: int, participants: Iterable[ParticipantRef], *, timeout_s: float | None = None
    ) -> None:
        """Declare the job's sink participants and their bindings (replacing the previous list); the shards
        of a sharded sink are one ref each (:meth:`ParticipantRef.shards_of`)."""
        refs = [
            coordinator_pb2.ParticipantRef(
                sink=p.sink, target=p.target, bindings=bindings_to_proto(p.bindings), shard=shard_to_proto(p.shard)
            )
            for p in participants
        ]
        request = coordinator_pb2.RegisterParticipantsRequest(job=job, writer_epoch=epoch, participants=refs)
        self._call("RegisterParticipants", request, timeout_s)

    def commit_transaction(
        self, txn: TransactionId, epoch: int, files: Sequence[StagedFile], *, timeout_s: float | None = None
    ) -> TransactionOutcome:
        """Run 2PC for ``txn`` with its staged ``files``; the answer is the transaction's state and reason."""
        check_txn(txn)
        request = coordinator_pb2.CommitTransactionRequest(
            job=txn.job, writer_epoch=epoch, batch=txn.batch, files=files_to_proto(files)
        )
        response: coordinator_pb2.CommitTransactionResponse = self._call("CommitTransaction", request, timeout_s)
        return outcome_from_proto(response.state, response.reason)

    def abort_transaction(
        self, txn: TransactionId, epoch: int, reason: str = "", *, timeout_s: float | None = None
    ) -> TransactionOutcome:
        """Abort ``txn`` unless it reached its commit point; the answer is the transaction's state."""
        check_txn(txn)
        request = coordinator_pb2.AbortTransactionRequest(
            job=txn.job, writer_epoch=epoch, batch=txn.batch, reason=reason
        )
        response: coordinator_pb2.AbortTransactionResponse = self._call("AbortTransaction", request, timeout_s)
        return outcome_from_proto(response.state)

    def get_transaction(self, txn: TransactionId, *, timeout_s: float | None = None) -> TransactionReport:
        """The latest attempt of ``txn``; ABORTED when the coordinator has no record of it (presumed abort)."""
        check_txn(txn)
        request = coordinator_pb2.GetTransactionRequest(job=txn.job, batch=txn.batch)
        response: coordinator_pb2.GetTransactionResponse = self._call("GetTransaction", request, timeout_s)
        return report_from_proto(response.transaction)

    def list_transactions(
        self,
        job: str = "",
        states: Iterable[TransactionState] = (),
        limit: int = 0,
        *,
        timeout_s: float | None = None,
    ) -> list[TransactionReport]:
        """Transactions, newest first: of ``job`` (all jobs when empty), in ``states`` (any when empty),
        at most ``limit`` (0: the coordinator's page size)."""
        request = coordinator_pb2.ListTransactionsRequest(
            job=job, states=[state_to_proto(s) for s in states], limit=limit
        )
        response: coordinator_pb2.ListTransactionsResponse = self._call("ListTransactions", request, timeout_s)
        return [report_from_proto(message) for message in response.transactions]

    def resolve_transaction(
        self, txn: TransactionId, resolution: Resolution, reason: str = "", *, timeout_s: float | None = None
    ) -> TransactionOutcome:
        """Force a stuck ``txn`` to commit (only if every participant voted yes) or abort (only if no
        commit was decided); the answer is the transaction's state."""
        check_txn(txn)
        request = coordinator_pb2.ResolveTransactionRequest(
            job=txn.job, batch=txn.batch, resolution=resolution_to_proto(resolution), reason=reason
        )
        response: coordinator_pb2.ResolveTransactionResponse = self._call("ResolveTransaction", request, timeout_s)
        return outcome_from_proto(response.state)
