"""The typed client of ``onceflow.v1.TransactionCoordinator`` (coordinator.proto): one method per RPC."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from onceflow.core.contract.clients.base import ServiceClient, check_txn
from onceflow.core.contract.participant_ref import ParticipantRef
from onceflow.core.contract.proto import (
    bindings_to_proto,
    files_to_proto,
    resolution_to_proto,
    shard_to_proto,
    state_to_proto,
)
from onceflow.core.contract.state import Resolution, TransactionState
from onceflow.core.contract.txn import TransactionId
from onceflow.core.settings import TlsSettings
from onceflow.core.staging import StagedFile
from onceflow.proto.v1 import coordinator_pb2, coordinator_pb2_grpc


class CoordinatorClient(ServiceClient):
    """Calls on a coordinator at ``target``, each with a deadline (``timeout_s`` per call, or the client's).

    Arguments are the contract's values (:class:`TransactionId`, :class:`StagedFile`,
    :class:`ParticipantRef`, :class:`TransactionState`, :class:`Resolution`); answers are the
    ``onceflow.v1`` response messages. A failed call raises the :class:`grpc.RpcError` as it came
    (its code and details say what the coordinator refused): what a failure means is the caller's call.
    A transaction id that is not a :class:`TransactionId` is a TypeError before anything is sent.
    """

    def __init__(self, target: str, tls: TlsSettings | None = None, *, timeout_s: float = 30.0) -> None:
        super().__init__(target, tls, timeout_s=timeout_s)
        self._stub = coordinator_pb2_grpc.TransactionCoordinatorStub(self.channel)  # type: ignore[no-untyped-call]

    @property
    def stub(self) -> coordinator_pb2_grpc.TransactionCoordinatorStub:
        """The raw stub on this client's channel, for tests that send requests the methods would not build."""
        return self._stub

    def register_writer(
        self, job: str, writer_id: str, *, timeout_s: float | None = None
    ) -> coordinator_pb2.RegisterWriterResponse:
        """Become ``job``'s writer: the answer's ``epoch`` fences every earlier writer; it also carries
        the job's ``last_committed_batch`` (-1: none)."""
        request = coordinator_pb2.RegisterWriterRequest(job=job, writer_id=writer_id)
        response: coordinator_pb2.RegisterWriterResponse = self._stub.RegisterWriter(
            request, timeout=self._timeout(timeout_s)
        )
        return response

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
        self._stub.RegisterParticipants(request, timeout=self._timeout(timeout_s))

    def commit_transaction(
        self, txn: TransactionId, epoch: int, files: Sequence[StagedFile], *, timeout_s: float | None = None
    ) -> coordinator_pb2.CommitTransactionResponse:
        """Run 2PC for ``txn`` with its staged ``files``; the answer is the transaction's state and reason."""
        check_txn(txn)
        request = coordinator_pb2.CommitTransactionRequest(
            job=txn.job, writer_epoch=epoch, batch=txn.batch, files=files_to_proto(files)
        )
        response: coordinator_pb2.CommitTransactionResponse = self._stub.CommitTransaction(
            request, timeout=self._timeout(timeout_s)
        )
        return response

    def abort_transaction(
        self, txn: TransactionId, epoch: int, reason: str = "", *, timeout_s: float | None = None
    ) -> coordinator_pb2.AbortTransactionResponse:
        """Abort ``txn`` unless it reached its commit point; the answer is the transaction's state."""
        check_txn(txn)
        request = coordinator_pb2.AbortTransactionRequest(
            job=txn.job, writer_epoch=epoch, batch=txn.batch, reason=reason
        )
        response: coordinator_pb2.AbortTransactionResponse = self._stub.AbortTransaction(
            request, timeout=self._timeout(timeout_s)
        )
        return response

    def get_transaction(self, txn: TransactionId, *, timeout_s: float | None = None) -> coordinator_pb2.Transaction:
        """The latest attempt of ``txn``; ABORTED when the coordinator has no record of it (presumed abort)."""
        check_txn(txn)
        request = coordinator_pb2.GetTransactionRequest(job=txn.job, batch=txn.batch)
        response = self._stub.GetTransaction(request, timeout=self._timeout(timeout_s))
        transaction: coordinator_pb2.Transaction = response.transaction
        return transaction

    def list_transactions(
        self,
        job: str = "",
        states: Iterable[TransactionState] = (),
        limit: int = 0,
        *,
        timeout_s: float | None = None,
    ) -> list[coordinator_pb2.Transaction]:
        """Transactions, newest first: of ``job`` (all jobs when empty), in ``states`` (any when empty),
        at most ``limit`` (0: the coordinator's page size)."""
        request = coordinator_pb2.ListTransactionsRequest(
            job=job, states=[state_to_proto(s) for s in states], limit=limit
        )
        response = self._stub.ListTransactions(request, timeout=self._timeout(timeout_s))
        return list(response.transactions)

    def resolve_transaction(
        self, txn: TransactionId, resolution: Resolution, reason: str = "", *, timeout_s: float | None = None
    ) -> coordinator_pb2.ResolveTransactionResponse:
        """Force a stuck ``txn`` to commit (only if every participant voted yes) or abort (only if no
        commit was decided); the answer is the transaction's state."""
        check_txn(txn)
        request = coordinator_pb2.ResolveTransactionRequest(
            job=txn.job, batch=txn.batch, resolution=resolution_to_proto(resolution), reason=reason
        )
        response: coordinator_pb2.ResolveTransactionResponse = self._stub.ResolveTransaction(
            request, timeout=self._timeout(timeout_s)
        )
        return response
