"""The Participant gRPC service: a thin adapter over the hosted :class:`SinkParticipant` objects."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Final

import grpc
import psycopg

from onceflow.contract import HostedCommits, Shard, SinkBinding, TransactionId, refuse_internal
from onceflow.contract.proto import (
    binding_from_proto,
    files_from_proto,
    hosted_commits_to_proto,
    shard_from_proto,
    txn_id_from_proto,
    txn_id_to_proto,
)
from onceflow.contract.staging import StagedFile, StagingError
from onceflow.contract.staging.confinement import InvalidStagingUri, PathNotAllowed, StagingConfinement
from onceflow.core.faults import NO_FAULTS, FaultInjector
from onceflow.core.grpc import DEFAULT_STATUS_CODES, translate_errors
from onceflow.core.logging import get_logger
from onceflow.core.request_limits import MAX_ID_BYTES, MAX_STAGED_FILES, MAX_URI_BYTES, oversize
from onceflow.proto.v1 import common_pb2, participant_pb2, participant_pb2_grpc
from onceflow.sinks.base import MAX_LISTED_BATCHES, SinkParticipant
from onceflow.sinks.exceptions import ShardMismatch, SinkError
from onceflow.sinks.lakehouse.exceptions import CommitConflict, TableStoreUnavailable
from onceflow.sinks.server.metrics import ParticipantMetrics

SERVICE_NAME: Final = participant_pb2.DESCRIPTOR.services_by_name["Participant"].full_name


class InvalidRequest(Exception):  # noqa: N818 - becomes INVALID_ARGUMENT, never leaves the servicer
    """A request argument is missing or malformed; the message names it.

    Raised only while the servicer reads a request's arguments, before any sink work, and turned
    into INVALID_ARGUMENT by :data:`STATUS_CODES`.
    """


#: Domain errors of the sinks become these status codes; anything else is a bug (UNKNOWN).
STATUS_CODES: Final[Mapping[type[BaseException], grpc.StatusCode]] = {
    **DEFAULT_STATUS_CODES,
    InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
    SinkError: grpc.StatusCode.FAILED_PRECONDITION,
    StagingError: grpc.StatusCode.FAILED_PRECONDITION,
    psycopg.OperationalError: grpc.StatusCode.UNAVAILABLE,
    NotImplementedError: grpc.StatusCode.UNIMPLEMENTED,
    TableStoreUnavailable: grpc.StatusCode.UNAVAILABLE,
    CommitConflict: grpc.StatusCode.UNAVAILABLE,
}

_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
#: Bindings one request may carry (a job's outputs times its tables and topics on one connection).
MAX_BINDINGS: Final = 64
#: Batches per job ListCommittedBatches lists when the request does not say.
DEFAULT_LISTED_BATCHES: Final = 1000
_log = get_logger(__name__)


class ParticipantServicer(participant_pb2_grpc.ParticipantServicer):
    """Maps the Participant RPCs onto the hosted sinks.

    - A missing or malformed argument is INVALID_ARGUMENT, an unknown sink NOT_FOUND; the message
      names the argument. So is one over a size limit (:mod:`onceflow.core.request_limits`).
    - A binding of onceflow's own bookkeeping (a table ``onceflow_*``, the consumer's tables, an
      internal topic or the sink's own commits topic) is INVALID_ARGUMENT naming it, on every RPC
      that carries bindings (:mod:`onceflow.contract.reserved`).
    - Every staged-file URI is checked against ``confinement`` (the staging roots and schemes)
      before any file is opened: Prepare votes no and Commit is INVALID_ARGUMENT, naming the file
      and the roots, never its contents or checksum.
    - A no vote is a normal :class:`PrepareTransactionResponse` with ``vote_commit = false`` and a
      reason naming the file or cause.
    - Sink errors (commit of an unknown transaction, abort of a committed one) are
      FAILED_PRECONDITION; an unreachable database or broker is UNAVAILABLE (the coordinator retries).
    - Every request names the shard of its sink it is meant for (unset: the whole sink). A sink that
      serves another shard (:class:`ShardMismatch`) votes no on Prepare and refuses everything else
      with FAILED_PRECONDITION, naming both; a shard's Prepare may list no files (its share of a
      small batch can be empty: it still records the batch as committed).
    - Built with ``recovering=True``, it answers only the read-only RPCs (ListPreparedTransactions,
      ListCommittedBatches) until :meth:`recovered`; the others are UNAVAILABLE meanwhile. So a
      participant waiting for a coordinator's decisions can still tell ``onceflow txn rebuild``
      what it holds.
    """

    def __init__(
        self,
        sinks: Mapping[str, SinkParticipant],
        confinement: StagingConfinement,
        metrics: ParticipantMetrics | None = None,
        faults: FaultInjector = NO_FAULTS,
        *,
        recovering: bool = False,
    ) -> None:
        self._sinks = dict(sinks)
        self._confinement = confinement
        self._metrics = metrics or ParticipantMetrics()
        self._faults = faults
        self._recovered = threading.Event()
        if not recovering:
            self._recovered.set()

    def recovered(self) -> None:
        """Every prepared transaction is resolved: take new work."""
        self._recovered.set()

    def _check_recovered(self, context: grpc.ServicerContext) -> None:
        if not self._recovered.is_set():
            context.abort(
                grpc.StatusCode.UNAVAILABLE,
                "the participant is still resolving its prepared transactions with the coordinator",
            )

    def _sink(self, name: str, context: grpc.ServicerContext) -> SinkParticipant:
        if not name:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "sink must be set (the name of a hosted sink)")
        sink = self._sinks.get(name)
        if sink is None:
            hosted = ", ".join(sorted(self._sinks))
            context.abort(grpc.StatusCode.NOT_FOUND, f"no sink named {name!r} here; hosted sinks: {hosted}")
        assert sink is not None  # context.abort raised
        return sink

    @staticmethod
    def _txn(
        request: participant_pb2.PrepareTransactionRequest
        | participant_pb2.CommitPreparedTransactionRequest
        | participant_pb2.AbortPreparedTransactionRequest,
    ) -> TransactionId:
        if not request.HasField("id"):
            raise InvalidRequest("id must be set (job and batch of the transaction)")
        if not request.id.job:
            raise InvalidRequest("id.job must not be empty")
        if (problem := oversize(request.id.job, MAX_ID_BYTES)) is not None:
            raise InvalidRequest(f"id.job {problem}")
        if request.id.batch < 0:
            raise InvalidRequest(f"id.batch must be >= 0, got {request.id.batch}")
        return txn_id_from_proto(request.id)

    @staticmethod
    def _shard(
        request: participant_pb2.PrepareTransactionRequest
        | participant_pb2.CommitPreparedTransactionRequest
        | participant_pb2.AbortPreparedTransactionRequest
        | participant_pb2.PrepareBindingsRequest,
    ) -> Shard:
        try:
            return shard_from_proto(request.shard if request.HasField("shard") else None)
        except ValueError as exc:
            raise InvalidRequest(f"shard: {exc}") from None

    @staticmethod
    def _files(messages: Sequence[common_pb2.StagedFile], *, required: bool) -> list[StagedFile]:
        if required and not messages:
            raise InvalidRequest("files must list the batch's staged files (none given)")
        if len(messages) > MAX_STAGED_FILES:
            raise InvalidRequest(f"files lists {len(messages)} staged files, more than the limit of {MAX_STAGED_FILES}")
        for i, message in enumerate(messages):
            if not message.uri:
                raise InvalidRequest(f"files[{i}].uri must not be empty")
            if (problem := oversize(message.uri, MAX_URI_BYTES)) is not None:
                raise InvalidRequest(f"files[{i}].uri {problem}")
            if message.count < 0:
                raise InvalidRequest(f"files[{i}].count must be >= 0, got {message.count} ({message.uri})")
            if not _SHA256.match(message.sha256):
                raise InvalidRequest(f"files[{i}].sha256 must be 64 hex digits, got {message.sha256!r} ({message.uri})")
        return files_from_proto(messages)

    @staticmethod
    def _bindings(
        messages: Sequence[common_pb2.SinkBinding], sink: SinkParticipant, *, schema_required: bool
    ) -> list[SinkBinding]:
        """The request's bindings, each checked (a binding of onceflow's own bookkeeping tables or topics
        included); :class:`InvalidRequest` names the binding and the field."""
        if len(messages) > MAX_BINDINGS:
            raise InvalidRequest(f"bindings lists {len(messages)} bindings, more than the limit of {MAX_BINDINGS}")
        bindings = []
        for i, message in enumerate(messages):
            for name in ("output", "table", "topic", "record_name", "mode", "value_format"):
                if (problem := oversize(getattr(message, name), MAX_ID_BYTES)) is not None:
                    raise InvalidRequest(f"bindings[{i}].{name} {problem}")
            try:
                binding = binding_from_proto(message)
                refuse_internal(binding, own_topics=sink.own_topics())
            except ValueError as exc:
                raise InvalidRequest(f"bindings[{i}]: {exc}") from None
            if binding.sink != sink.name:
                raise InvalidRequest(
                    f"bindings[{i}].sink is {binding.sink!r}, but the request is for sink {sink.name!r}"
                )
            if schema_required and binding.schema is None:
                raise InvalidRequest(f"bindings[{i}] ({binding.describe()}) has no arrow_schema")
            bindings.append(binding)
        return bindings

    def _confine(self, files: Sequence[StagedFile]) -> None:
        """Raise :class:`PathNotAllowed` (naming the file) unless every file may be opened, and
        :class:`InvalidRequest` for a URI that is no staging URI at all (a chained URL)."""
        for i, file in enumerate(files):
            try:
                self._confinement.check(file.uri)
            except PathNotAllowed as exc:
                raise PathNotAllowed(file.uri, f"files[{i}]: {exc.reason}") from None
            except InvalidStagingUri as exc:
                raise InvalidRequest(f"files[{i}].uri: {exc}") from None

    @translate_errors(STATUS_CODES)
    def PrepareTransaction(  # noqa: N802 - gRPC method name
        self, request: participant_pb2.PrepareTransactionRequest, context: grpc.ServicerContext
    ) -> participant_pb2.PrepareTransactionResponse:
        self._check_recovered(context)
        sink = self._sink(request.sink, context)
        txn = self._txn(request)
        shard = self._shard(request)
        files = self._files(request.files, required=not shard.is_sharded)
        bindings = self._bindings(request.bindings, sink, schema_required=False)
        try:
            sink.check_serves(shard)
            self._confine(files)
        except (PathNotAllowed, ShardMismatch) as exc:
            file = isinstance(exc, PathNotAllowed)
            refused = "staged file refused" if file else "wrong shard"
            event = "prepare.file_refused" if file else "prepare.wrong_shard"
            _log.warning(event, sink=sink.name, **txn.log_fields(), reason=str(exc))
            self._metrics.prepares.labels(sink.name, "no").inc()
            return participant_pb2.PrepareTransactionResponse(vote_commit=False, reason=f"{refused}: {exc}")
        self._faults.at("prepare-received", sink=sink.record_name, txn=txn)
        started = time.perf_counter()
        result = sink.prepare(txn, files, bindings)
        if result.vote_commit:
            self._faults.at("prepare-durable", sink=sink.record_name, txn=txn)
        self._metrics.prepare_seconds.labels(sink.name).observe(time.perf_counter() - started)
        self._metrics.prepares.labels(sink.name, "yes" if result.vote_commit else "no").inc()
        return participant_pb2.PrepareTransactionResponse(
            vote_commit=result.vote_commit, reason=result.reason, rows=result.rows
        )

    @translate_errors(STATUS_CODES)
    def CommitPreparedTransaction(  # noqa: N802
        self, request: participant_pb2.CommitPreparedTransactionRequest, context: grpc.ServicerContext
    ) -> participant_pb2.CommitPreparedTransactionResponse:
        self._check_recovered(context)
        sink = self._sink(request.sink, context)
        txn = self._txn(request)
        shard = self._shard(request)
        files = self._files(request.files, required=False)
        bindings = self._bindings(request.bindings, sink, schema_required=False)
        try:
            self._confine(files)
        except PathNotAllowed as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        sink.check_serves(shard)
        self._faults.at("commit-received", sink=sink.record_name, txn=txn)
        sink.commit(txn, files, bindings)
        self._faults.at("commit-applied", sink=sink.record_name, txn=txn)
        self._metrics.commits.labels(sink.name).inc()
        return participant_pb2.CommitPreparedTransactionResponse()

    @translate_errors(STATUS_CODES)
    def PrepareBindings(  # noqa: N802
        self, request: participant_pb2.PrepareBindingsRequest, context: grpc.ServicerContext
    ) -> participant_pb2.PrepareBindingsResponse:
        """Check (and create) a job's tables and topics; a refusal is FAILED_PRECONDITION naming the mismatch."""
        self._check_recovered(context)
        sink = self._sink(request.sink, context)
        if not request.job:
            raise InvalidRequest("job must not be empty")
        if (problem := oversize(request.job, MAX_ID_BYTES)) is not None:
            raise InvalidRequest(f"job {problem}")
        shard = self._shard(request)
        bindings = self._bindings(request.bindings, sink, schema_required=True)
        sink.check_serves(shard)
        sink.check_shardable(request.job, bindings)
        sink.prepare_bindings(request.job, bindings)
        _log.info("bindings.ready", sink=sink.name, job=request.job, bindings=";".join(b.describe() for b in bindings))
        return participant_pb2.PrepareBindingsResponse()

    @translate_errors(STATUS_CODES)
    def AbortPreparedTransaction(  # noqa: N802
        self, request: participant_pb2.AbortPreparedTransactionRequest, context: grpc.ServicerContext
    ) -> participant_pb2.AbortPreparedTransactionResponse:
        self._check_recovered(context)
        sink = self._sink(request.sink, context)
        txn = self._txn(request)
        shard = self._shard(request)
        sink.check_serves(shard)
        sink.abort(txn)
        self._metrics.aborts.labels(sink.name).inc()
        return participant_pb2.AbortPreparedTransactionResponse()

    @translate_errors(STATUS_CODES)
    def ListPreparedTransactions(  # noqa: N802
        self, request: participant_pb2.ListPreparedTransactionsRequest, context: grpc.ServicerContext
    ) -> participant_pb2.ListPreparedTransactionsResponse:
        sinks = [self._sink(request.sink, context)] if request.sink else [self._sinks[n] for n in sorted(self._sinks)]
        return participant_pb2.ListPreparedTransactionsResponse(
            transactions=[
                participant_pb2.PreparedTransaction(sink=sink.name, id=txn_id_to_proto(txn))
                for sink in sinks
                for txn in sink.list_prepared()
            ]
        )

    @translate_errors(STATUS_CODES)
    def ListCommittedBatches(  # noqa: N802
        self, request: participant_pb2.ListCommittedBatchesRequest, context: grpc.ServicerContext
    ) -> participant_pb2.ListCommittedBatchesResponse:
        """Each sink's commit records per job; a sink kind that keeps none is UNIMPLEMENTED naming it."""
        if (problem := oversize(request.job, MAX_ID_BYTES)) is not None:
            raise InvalidRequest(f"job {problem}")
        if not 0 <= request.max_batches <= MAX_LISTED_BATCHES:
            raise InvalidRequest(f"max_batches must be 0 to {MAX_LISTED_BATCHES}, got {request.max_batches}")
        sinks = [self._sink(request.sink, context)] if request.sink else [self._sinks[n] for n in sorted(self._sinks)]
        limit = request.max_batches or DEFAULT_LISTED_BATCHES
        return hosted_commits_to_proto(
            HostedCommits(sink.name, sink.shard, tuple(sink.committed_batches(request.job or None, limit)))
            for sink in sinks
        )
