"""The TransactionCoordinator gRPC servicer: a thin adapter over :class:`TwoPhaseCommitEngine`.

Each RPC converts the request (``from_proto``), calls the engine, and converts the answer
(``to_proto``). Errors become status codes here and nowhere else:

- INVALID_ARGUMENT: a malformed argument (empty job, negative batch, bad staged file, ...) or one
  over a size limit (see :mod:`~onceflow.coordinator.engine.validation`);
- NOT_FOUND: a job that never registered a writer;
- FAILED_PRECONDITION: a fenced writer (another writer owns the job), an epoch never issued, a
  job without participants, a decided transaction an abort or resolution would flip;
- RESOURCE_EXHAUSTED: the log refused this request's records as too large (nothing was written;
  the coordinator keeps serving);
- UNAVAILABLE: the coordinator does not serve: a standby, or not yet taken over its log (the
  message names the active coordinator when it knows it), or stopped (closed, fenced by a newer
  instance, log failed). Clients retry, on another coordinator of their list.
"""

from __future__ import annotations

from collections.abc import Mapping

import grpc

from onceflow.contract.proto import files_from_proto, state_to_proto
from onceflow.coordinator import convert
from onceflow.coordinator.engine import TwoPhaseCommitEngine
from onceflow.coordinator.exceptions import (
    CoordinatorStopped,
    InvalidRequest,
    LogAppendRejected,
    NoParticipants,
    ResolutionRefused,
    TransactionLogError,
    UnknownEpoch,
    UnknownJob,
)
from onceflow.coordinator.participants.base import BindingsRefused, ParticipantFailed, ParticipantUnavailable
from onceflow.core.grpc import DEFAULT_STATUS_CODES, translate_errors
from onceflow.proto.v1 import coordinator_pb2, coordinator_pb2_grpc

SERVICE_NAME = coordinator_pb2.DESCRIPTOR.services_by_name["TransactionCoordinator"].full_name

STATUS_CODES: Mapping[type[BaseException], grpc.StatusCode] = {
    **DEFAULT_STATUS_CODES,
    InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
    BindingsRefused: grpc.StatusCode.FAILED_PRECONDITION,
    ParticipantUnavailable: grpc.StatusCode.UNAVAILABLE,
    ParticipantFailed: grpc.StatusCode.UNAVAILABLE,
    LogAppendRejected: grpc.StatusCode.RESOURCE_EXHAUSTED,
    UnknownJob: grpc.StatusCode.NOT_FOUND,
    UnknownEpoch: grpc.StatusCode.FAILED_PRECONDITION,
    NoParticipants: grpc.StatusCode.FAILED_PRECONDITION,
    ResolutionRefused: grpc.StatusCode.FAILED_PRECONDITION,
    CoordinatorStopped: grpc.StatusCode.UNAVAILABLE,
    TransactionLogError: grpc.StatusCode.UNAVAILABLE,
}


class TransactionCoordinatorServicer(coordinator_pb2_grpc.TransactionCoordinatorServicer):
    """coordinator.proto over the engine."""

    def __init__(self, engine: TwoPhaseCommitEngine) -> None:
        self._engine = engine

    @translate_errors(STATUS_CODES)
    def RegisterWriter(  # noqa: N802 - gRPC method name
        self, request: coordinator_pb2.RegisterWriterRequest, context: grpc.ServicerContext
    ) -> coordinator_pb2.RegisterWriterResponse:
        job = self._engine.register_writer(request.job, request.writer_id or context.peer())
        return coordinator_pb2.RegisterWriterResponse(epoch=job.epoch, last_committed_batch=job.last_committed_batch)

    @translate_errors(STATUS_CODES)
    def RegisterParticipants(  # noqa: N802 - gRPC method name
        self, request: coordinator_pb2.RegisterParticipantsRequest, context: grpc.ServicerContext
    ) -> coordinator_pb2.RegisterParticipantsResponse:
        participants = convert.participants_from_proto(request.participants)
        self._engine.register_participants(request.job, request.writer_epoch, participants)
        return coordinator_pb2.RegisterParticipantsResponse()

    @translate_errors(STATUS_CODES)
    def CommitTransaction(  # noqa: N802 - gRPC method name
        self, request: coordinator_pb2.CommitTransactionRequest, context: grpc.ServicerContext
    ) -> coordinator_pb2.CommitTransactionResponse:
        outcome = self._engine.commit_transaction(
            request.job, request.writer_epoch, request.batch, files_from_proto(request.files)
        )
        return coordinator_pb2.CommitTransactionResponse(state=state_to_proto(outcome.state), reason=outcome.reason)

    @translate_errors(STATUS_CODES)
    def AbortTransaction(  # noqa: N802 - gRPC method name
        self, request: coordinator_pb2.AbortTransactionRequest, context: grpc.ServicerContext
    ) -> coordinator_pb2.AbortTransactionResponse:
        outcome = self._engine.abort_transaction(request.job, request.writer_epoch, request.batch, request.reason)
        return coordinator_pb2.AbortTransactionResponse(state=state_to_proto(outcome.state))

    @translate_errors(STATUS_CODES)
    def GetTransaction(  # noqa: N802 - gRPC method name
        self, request: coordinator_pb2.GetTransactionRequest, context: grpc.ServicerContext
    ) -> coordinator_pb2.GetTransactionResponse:
        txn = self._engine.get_transaction(request.job, request.batch)
        return coordinator_pb2.GetTransactionResponse(transaction=convert.transaction_to_proto(txn))

    @translate_errors(STATUS_CODES)
    def ListTransactions(  # noqa: N802 - gRPC method name
        self, request: coordinator_pb2.ListTransactionsRequest, context: grpc.ServicerContext
    ) -> coordinator_pb2.ListTransactionsResponse:
        if request.limit < 0:
            raise InvalidRequest("limit", f"must be >= 0, got {request.limit}")
        states = [convert.state_from_proto(value, "states") for value in request.states]
        txns = self._engine.list_transactions(request.job or None, states, request.limit)
        return coordinator_pb2.ListTransactionsResponse(
            transactions=[convert.transaction_to_proto(txn) for txn in txns]
        )

    @translate_errors(STATUS_CODES)
    def ResolveTransaction(  # noqa: N802 - gRPC method name
        self, request: coordinator_pb2.ResolveTransactionRequest, context: grpc.ServicerContext
    ) -> coordinator_pb2.ResolveTransactionResponse:
        resolution = convert.resolution_from_proto(request.resolution)
        outcome = self._engine.resolve_transaction(request.job, request.batch, resolution, request.reason)
        return coordinator_pb2.ResolveTransactionResponse(state=state_to_proto(outcome.state))
