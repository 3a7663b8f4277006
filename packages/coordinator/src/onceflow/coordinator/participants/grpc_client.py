"""The gRPC :class:`ParticipantConnection` over ``onceflow.v1.Participant`` (participant.proto), through the
contract's typed client (:class:`onceflow.contract.clients.ParticipantClient`)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import grpc

from onceflow.contract import ParticipantRef, PrepareVote, TransactionId, clients
from onceflow.contract.clients import CallCancelled, RequestRefused, RpcFailed, ServiceUnavailable
from onceflow.contract.staging import StagedFile
from onceflow.coordinator.participants.base import (
    BindingsRefused,
    ParticipantConnection,
    ParticipantConnector,
    ParticipantFailed,
    ParticipantUnavailable,
)
from onceflow.core.settings import TlsSettings


class GrpcParticipantConnection(ParticipantConnection):
    """One sink of a participant server, reached through the typed client of its target (shared by the
    sinks the server hosts)."""

    def __init__(self, ref: ParticipantRef, rpc: clients.ParticipantClient) -> None:
        super().__init__(ref)
        self._rpc = rpc

    def _error(self, exc: RpcFailed, call: str) -> Exception:
        reason = f"{call}: {exc.code().name}: {exc.details()}"
        if isinstance(exc, ServiceUnavailable | CallCancelled):  # no answer: the call may be retried
            return ParticipantUnavailable(self.name, reason)
        return ParticipantFailed(self.name, reason)

    def prepare(self, txn: TransactionId, files: Sequence[StagedFile], timeout: float) -> PrepareVote:
        try:
            response = self._rpc.prepare_transaction(
                self.sink, txn, files, self.ref.bindings, shard=self.ref.shard, timeout_s=timeout
            )
        except RpcFailed as exc:
            # Older participants voted no with FAILED_PRECONDITION; the contract now is vote_commit=false.
            if isinstance(exc, RequestRefused) and exc.code() == grpc.StatusCode.FAILED_PRECONDITION:
                return PrepareVote(vote_commit=False, reason=exc.details() or "voted no")
            raise self._error(exc, "PrepareTransaction") from None
        return response

    def commit(self, txn: TransactionId, files: Sequence[StagedFile], timeout: float) -> None:
        try:
            self._rpc.commit_prepared_transaction(
                self.sink, txn, files, self.ref.bindings, shard=self.ref.shard, timeout_s=timeout
            )
        except RpcFailed as exc:
            raise self._error(exc, "CommitPreparedTransaction") from None

    def prepare_bindings(self, job: str, timeout: float) -> None:
        try:
            self._rpc.prepare_bindings(self.sink, job, self.ref.bindings, shard=self.ref.shard, timeout_s=timeout)
        except RpcFailed as exc:
            if exc.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT):
                raise BindingsRefused(self.name, self.ref.target, exc.details()) from None
            raise self._error(exc, "PrepareBindings") from None

    def last_committed(self, job: str, timeout: float) -> int | None:
        try:
            found = self._rpc.list_committed_batches(self.sink, job, max_batches=1, timeout_s=timeout)
        except RpcFailed:
            return None  # unreachable, or a sink kind without commit records: it cannot tell
        return max((hosted.last_batch(job) for hosted in found), default=-1)

    def abort(self, txn: TransactionId, timeout: float) -> None:
        try:
            self._rpc.abort_prepared_transaction(self.sink, txn, shard=self.ref.shard, timeout_s=timeout)
        except RpcFailed as exc:
            raise self._error(exc, "AbortPreparedTransaction") from None


class GrpcParticipantConnector(ParticipantConnector):
    """One typed client (one channel) per participant target (TLS when ``tls.ca`` is set), shared by the
    sinks it hosts."""

    def __init__(self, tls: TlsSettings | None = None) -> None:
        self._tls = tls
        self._lock = threading.Lock()
        self._rpcs: dict[str, clients.ParticipantClient] = {}
        self._clients: dict[ParticipantRef, GrpcParticipantConnection] = {}

    def connect(self, ref: ParticipantRef) -> ParticipantConnection:
        with self._lock:
            client = self._clients.get(ref)
            if client is None:
                rpc = self._rpcs.get(ref.target)
                if rpc is None:
                    rpc = self._rpcs[ref.target] = clients.ParticipantClient(ref.target, self._tls)
                client = self._clients[ref] = GrpcParticipantConnection(ref, rpc)
            return client

    def close(self) -> None:
        with self._lock:
            for rpc in self._rpcs.values():
                rpc.close()
            self._rpcs.clear()
            self._clients.clear()
