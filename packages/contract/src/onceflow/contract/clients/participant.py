"""The typed client of ``onceflow.v1.Participant`` (participant.proto): one method per RPC."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from google.protobuf.message import Message

from onceflow.contract.bindings import SinkBinding
from onceflow.contract.clients.base import ServiceClient, check_txn
from onceflow.contract.commits import HostedCommits
from onceflow.contract.proto import (
    bindings_to_proto,
    files_to_proto,
    hosted_commits_from_proto,
    shard_to_proto,
    txn_id_from_proto,
    txn_id_to_proto,
)
from onceflow.contract.shards import WHOLE_SINK, Shard
from onceflow.contract.staging import StagedFile
from onceflow.contract.txn import TransactionId
from onceflow.contract.vote import PrepareVote
from onceflow.proto.v1 import participant_pb2, participant_pb2_grpc


class ParticipantClient(ServiceClient[participant_pb2_grpc.ParticipantStub]):
    """Calls on a participant server at ``target`` (every sink it hosts: each call names its ``sink``),
    each with a deadline (``timeout_s`` per call, or the client's).

    Arguments are the contract's values (:class:`TransactionId`, :class:`StagedFile`,
    :class:`SinkBinding`, :class:`Shard`: which share of a sharded sink the server is believed to
    serve; it refuses a request whose shard is not its own), and so are the answers (a
    :class:`PrepareVote`, ``(sink, TransactionId)`` pairs, :class:`HostedCommits`); a failed call raises its typed error
    (:mod:`~onceflow.contract.clients.errors`). A transaction id that is not a :class:`TransactionId` is a
    TypeError before anything is sent.
    """

    stub_class = participant_pb2_grpc.ParticipantStub

    def prepare_bindings(
        self,
        sink: str,
        job: str,
        bindings: Iterable[SinkBinding],
        *,
        shard: Shard = WHOLE_SINK,
        timeout_s: float | None = None,
    ) -> None:
        """Check (and create or widen) the tables and topics of ``job``'s bindings on ``sink`` (and that the
        server serves ``shard`` of it); FAILED_PRECONDITION or INVALID_ARGUMENT name what does not fit."""
        request = participant_pb2.PrepareBindingsRequest(
            sink=sink, job=job, bindings=bindings_to_proto(bindings), shard=shard_to_proto(shard)
        )
        self._unary(self._stub, "PrepareBindings", request, timeout_s)

    def prepare_transaction(
        self,
        sink: str,
        txn: TransactionId,
        files: Sequence[StagedFile],
        bindings: Iterable[SinkBinding] = (),
        *,
        shard: Shard = WHOLE_SINK,
        timeout_s: float | None = None,
    ) -> PrepareVote:
        """Phase one: the participant's :class:`PrepareVote` (``vote_commit``, a no vote's ``reason``, ``rows``)."""
        request = participant_pb2.PrepareTransactionRequest
        response = self._staged_call("PrepareTransaction", request, sink, txn, files, bindings, shard, timeout_s)
        return PrepareVote(vote_commit=response.vote_commit, reason=response.reason, rows=response.rows)

    def commit_prepared_transaction(
        self,
        sink: str,
        txn: TransactionId,
        files: Sequence[StagedFile],
        bindings: Iterable[SinkBinding] = (),
        *,
        shard: Shard = WHOLE_SINK,
        timeout_s: float | None = None,
    ) -> None:
        """Phase two, commit: idempotent; the files and bindings let a sink redo a lost prepare."""
        request = participant_pb2.CommitPreparedTransactionRequest
        self._staged_call("CommitPreparedTransaction", request, sink, txn, files, bindings, shard, timeout_s)

    def _staged_call(  # noqa: PLR0917 - the fields both phases send
        self,
        rpc: str,
        request_type: Callable[..., Message],
        sink: str,
        txn: TransactionId,
        files: Sequence[StagedFile],
        bindings: Iterable[SinkBinding],
        shard: Shard,
        timeout_s: float | None,
    ) -> Any:
        """Prepare and Commit send the same fields: the transaction, its staged files, its bindings and the shard."""
        check_txn(txn)
        request = request_type(
            sink=sink,
            id=txn_id_to_proto(txn),
            files=files_to_proto(files),
            bindings=bindings_to_proto(bindings),
            shard=shard_to_proto(shard),
        )
        return self._unary(self._stub, rpc, request, timeout_s)

    def abort_prepared_transaction(
        self, sink: str, txn: TransactionId, *, shard: Shard = WHOLE_SINK, timeout_s: float | None = None
    ) -> None:
        """Phase two, abort: idempotent (aborting an unknown transaction is not an error)."""
        check_txn(txn)
        request = participant_pb2.AbortPreparedTransactionRequest(
            sink=sink, id=txn_id_to_proto(txn), shard=shard_to_proto(shard)
        )
        self._unary(self._stub, "AbortPreparedTransaction", request, timeout_s)

    def list_prepared_transactions(
        self, sink: str = "", *, timeout_s: float | None = None
    ) -> list[tuple[str, TransactionId]]:
        """``(sink, txn)`` of every transaction ``sink`` (every sink of the server when empty) holds
        prepared: in doubt until the coordinator's decision reaches it."""
        request = participant_pb2.ListPreparedTransactionsRequest(sink=sink)
        response = self._unary(self._stub, "ListPreparedTransactions", request, timeout_s)
        return [(prepared.sink, txn_id_from_proto(prepared.id)) for prepared in response.transactions]

    def list_committed_batches(
        self, sink: str = "", job: str = "", max_batches: int = 0, *, timeout_s: float | None = None
    ) -> list[HostedCommits]:
        """Per sink (every sink of the server when empty): which shard of it the server serves and, per
        job (every job when empty), the batches the sink's commit records say it committed, newest
        first (at most ``max_batches`` per job, 0: the server's default). UNIMPLEMENTED for a sink kind
        that keeps no such records."""
        request = participant_pb2.ListCommittedBatchesRequest(sink=sink, job=job, max_batches=max_batches)
        response: participant_pb2.ListCommittedBatchesResponse = self._unary(
            self._stub, "ListCommittedBatches", request, timeout_s
        )
        return hosted_commits_from_proto(response)
