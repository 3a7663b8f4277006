"""The gRPC :class:`ParticipantClient` over ``onceflow.v1.Participant`` (participant.proto)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import grpc

from onceflow.coordinator.model import ParticipantRef, StagedFile, TransactionId
from onceflow.coordinator.participants.base import (
    BindingsRefused,
    ParticipantClient,
    ParticipantConnector,
    ParticipantFailed,
    ParticipantUnavailable,
    PrepareVote,
)
from onceflow.core.contract.proto import bindings_to_proto, files_to_proto
from onceflow.core.grpc import open_channel
from onceflow.core.settings import TlsSettings
from onceflow.proto.v1 import common_pb2, participant_pb2, participant_pb2_grpc

#: Status codes that mean "could not get an answer": the call may be retried.
_UNAVAILABLE_CODES = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}
)


def _txn_proto(txn: TransactionId) -> common_pb2.TransactionId:
    return common_pb2.TransactionId(job=txn.job, batch=txn.batch)


class GrpcParticipantClient(ParticipantClient):
    """One sink of a participant server, reached over a shared channel."""

    def __init__(self, ref: ParticipantRef, channel: grpc.Channel) -> None:
        super().__init__(ref)
        self._stub = participant_pb2_grpc.ParticipantStub(channel)  # type: ignore[no-untyped-call]
        self._bindings = bindings_to_proto(ref.bindings)

    def _error(self, exc: grpc.RpcError, call: str) -> Exception:
        code = exc.code() if isinstance(exc, grpc.Call) else None
        details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
        reason = f"{call}: {code.name if code else 'error'}: {details}"
        if code in _UNAVAILABLE_CODES:
            return ParticipantUnavailable(self.sink, reason)
        return ParticipantFailed(self.sink, reason)

    def prepare(self, txn: TransactionId, files: Sequence[StagedFile], timeout: float) -> PrepareVote:
        request = participant_pb2.PrepareTransactionRequest(
            sink=self.sink, id=_txn_proto(txn), files=files_to_proto(files), bindings=self._bindings
        )
        try:
            response = self._stub.PrepareTransaction(request, timeout=timeout)
        except grpc.RpcError as exc:
            # Older participants voted no with FAILED_PRECONDITION; the contract now is vote_commit=false.
            if isinstance(exc, grpc.Call) and exc.code() == grpc.StatusCode.FAILED_PRECONDITION:
                return PrepareVote(vote_commit=False, reason=exc.details() or "voted no")
            raise self._error(exc, "PrepareTransaction") from None
        return PrepareVote(vote_commit=response.vote_commit, reason=response.reason, rows=response.rows)

    def commit(self, txn: TransactionId, files: Sequence[StagedFile], timeout: float) -> None:
        request = participant_pb2.CommitPreparedTransactionRequest(
            sink=self.sink, id=_txn_proto(txn), files=files_to_proto(files), bindings=self._bindings
        )
        try:
            self._stub.CommitPreparedTransaction(request, timeout=timeout)
        except grpc.RpcError as exc:
            raise self._error(exc, "CommitPreparedTransaction") from None

    def prepare_bindings(self, job: str, timeout: float) -> None:
        request = participant_pb2.PrepareBindingsRequest(sink=self.sink, job=job, bindings=self._bindings)
        try:
            self._stub.PrepareBindings(request, timeout=timeout)
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            if code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT):
                raise BindingsRefused(self.sink, self.ref.target, str(exc.details())) from None
            raise self._error(exc, "PrepareBindings") from None

    def abort(self, txn: TransactionId, timeout: float) -> None:
        request = participant_pb2.AbortPreparedTransactionRequest(sink=self.sink, id=_txn_proto(txn))
        try:
            self._stub.AbortPreparedTransaction(request, timeout=timeout)
        except grpc.RpcError as exc:
            raise self._error(exc, "AbortPreparedTransaction") from None


class GrpcParticipantConnector(ParticipantConnector):
    """One channel per participant target (TLS when ``tls.ca`` is set), shared by the sinks it hosts."""

    def __init__(self, tls: TlsSettings | None = None) -> None:
        self._tls = tls
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}
        self._clients: dict[ParticipantRef, GrpcParticipantClient] = {}

    def connect(self, ref: ParticipantRef) -> ParticipantClient:
        with self._lock:
            client = self._clients.get(ref)
            if client is None:
                channel = self._channels.get(ref.target)
                if channel is None:
                    channel = self._channels[ref.target] = open_channel(ref.target, self._tls)
                client = self._clients[ref] = GrpcParticipantClient(ref, channel)
            return client

    def close(self) -> None:
        with self._lock:
            for channel in self._channels.values():
                channel.close()
            self._channels.clear()
            self._clients.clear()
