"""In-process fake participants: the same sink state behind a direct client or a real gRPC server.

A :class:`FakeSink` records every call and misbehaves on request (votes no, is slow, is
unavailable, fails its next commits). :class:`FakeParticipants` hands out in-process clients for the
engine; :class:`FakeParticipantServer` serves the same sinks over participant.proto, so a
coordinator *process* can talk to them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Container, Iterable, Sequence

import grpc

from onceflow.contract import ParticipantRef, PrepareVote, SinkBinding, TransactionId
from onceflow.contract.proto import bindings_from_proto, files_from_proto
from onceflow.contract.staging import StagedFile
from onceflow.coordinator.participants.base import (
    BindingsRefused,
    ParticipantConnection,
    ParticipantConnector,
    ParticipantUnavailable,
)
from onceflow.core.grpc import build_server
from onceflow.core.settings import GrpcServerSettings
from onceflow.proto.v1 import participant_pb2, participant_pb2_grpc

PARTICIPANT_SERVICE = participant_pb2.DESCRIPTOR.services_by_name["Participant"].full_name


class FakeSink:
    """A sink participant in memory. Behaviour knobs may be changed at any time (thread-safe)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._changed = threading.Condition()
        self.prepared: dict[TransactionId, tuple[StagedFile, ...]] = {}
        self.committed: dict[TransactionId, int] = {}
        self.aborted: dict[TransactionId, int] = {}
        self.calls: list[tuple[str, TransactionId]] = []
        #: Vote no with this reason.
        self.vote_no: str | None = None
        #: Sleep this long in prepare, and in abort.
        self.prepare_delay = 0.0
        self.abort_delay = 0.0
        #: False: every call fails as unavailable.
        self.available = True
        #: Fail this many of the next commit calls as unavailable.
        self.fail_commits = 0
        #: Refuse bindings with this reason.
        self.refuse_bindings: str | None = None
        #: The bindings each call carried: (call, txn or job, bindings).
        self.bindings_seen: list[tuple[str, object, tuple[SinkBinding, ...]]] = []
        #: The files each prepare carried.
        self.files_seen: dict[TransactionId, tuple[StagedFile, ...]] = {}
        #: The files the last commit of each transaction carried.
        self.commit_files: dict[TransactionId, tuple[StagedFile, ...]] = {}

    def prepare_bindings(self, job: str, bindings: Sequence[SinkBinding]) -> None:
        with self._changed:
            self.bindings_seen.append(("prepare_bindings", job, tuple(bindings)))
            if not self.available:
                raise ParticipantUnavailable(self.name, "PrepareBindings: fake sink is down")
            if self.refuse_bindings is not None:
                raise BindingsRefused(self.name, f"fake:{self.name}", self.refuse_bindings)

    def _record(self, call: str, txn: TransactionId) -> None:
        with self._changed:
            self.calls.append((call, txn))
            if not self.available:
                raise ParticipantUnavailable(self.name, f"{call}: fake sink is down")

    def prepare(self, txn: TransactionId, files: Sequence[StagedFile]) -> PrepareVote:
        self._record("prepare", txn)
        if self.prepare_delay:
            time.sleep(self.prepare_delay)
        with self._changed:
            if self.vote_no is not None:
                return PrepareVote(vote_commit=False, reason=self.vote_no)
            self.prepared[txn] = tuple(files)
            self._changed.notify_all()
            return PrepareVote(vote_commit=True, rows=sum(f.count for f in files))

    def commit(self, txn: TransactionId, files: Sequence[StagedFile]) -> None:
        self._record("commit", txn)
        with self._changed:
            if self.fail_commits > 0:
                self.fail_commits -= 1
                raise ParticipantUnavailable(self.name, "commit: fake sink failed this commit")
            self.prepared.pop(txn, None)
            self.commit_files[txn] = tuple(files)
            self.committed[txn] = self.committed.get(txn, 0) + 1
            self._changed.notify_all()

    def abort(self, txn: TransactionId) -> None:
        self._record("abort", txn)
        if self.abort_delay:
            time.sleep(self.abort_delay)
        with self._changed:
            self.prepared.pop(txn, None)
            self.aborted[txn] = self.aborted.get(txn, 0) + 1
            self._changed.notify_all()

    def last_committed(self, job: str) -> int:
        """The newest batch of ``job`` committed here (-1: none), as a sink's commit records say."""
        with self._changed:
            return max((txn.batch for txn in self.committed if txn.job == job), default=-1)

    def count(self, call: str, txn: TransactionId | None = None) -> int:
        """How many ``call`` calls (``prepare``/``commit``/``abort``) arrived, for ``txn`` or any."""
        with self._changed:
            return sum(1 for name, t in self.calls if name == call and (txn is None or t == txn))

    def wait_for(self, predicate: str, txn: TransactionId, timeout: float = 10.0) -> bool:
        """Wait until ``txn`` is ``committed``/``aborted``/``prepared`` here."""
        tables: dict[str, Container[TransactionId]] = {
            "committed": self.committed,
            "aborted": self.aborted,
            "prepared": self.prepared,
        }
        table = tables[predicate]
        with self._changed:
            return self._changed.wait_for(lambda: txn in table, timeout)


class FakeParticipantConnection(ParticipantConnection):
    """A :class:`ParticipantConnection` calling a :class:`FakeSink` directly."""

    def __init__(self, ref: ParticipantRef, sink: FakeSink) -> None:
        super().__init__(ref)
        self.fake = sink

    def prepare(self, txn: TransactionId, files: Sequence[StagedFile], timeout: float) -> PrepareVote:
        with self.fake._changed:
            self.fake.bindings_seen.append(("prepare", txn, self.ref.bindings))
            self.fake.files_seen[txn] = tuple(files)
        return self.fake.prepare(txn, files)

    def commit(self, txn: TransactionId, files: Sequence[StagedFile], timeout: float) -> None:
        with self.fake._changed:
            self.fake.bindings_seen.append(("commit", txn, self.ref.bindings))
        self.fake.commit(txn, files)

    def prepare_bindings(self, job: str, timeout: float) -> None:
        self.fake.prepare_bindings(job, self.ref.bindings)

    def abort(self, txn: TransactionId, timeout: float) -> None:
        self.fake.abort(txn)

    def last_committed(self, job: str, timeout: float) -> int | None:
        return self.fake.last_committed(job) if self.fake.available else None


class FakeParticipants(ParticipantConnector):
    """In-process participants: ``add("sqlite")`` returns the ref to register with the coordinator;
    ``add_shards("kafka", 2)`` adds one fake per shard (``kafka#0``, ``kafka#1``) and returns their refs."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.sinks: dict[str, FakeSink] = {}
        self._refs: dict[str, ParticipantRef] = {}
        for name in names:
            self.add(name)

    def add(self, name: str) -> ParticipantRef:
        self.sinks[name] = FakeSink(name)
        self._refs[name] = ParticipantRef(sink=name, target=f"fake:{name}")
        return self.ref(name)

    def add_shards(self, sink: str, count: int) -> tuple[ParticipantRef, ...]:
        refs = ParticipantRef.shards_of(sink, [f"fake:{sink}-{index}" for index in range(count)])
        for ref in refs:
            self.sinks[ref.name] = FakeSink(ref.name)
            self._refs[ref.name] = ref
        return refs

    def ref(self, name: str) -> ParticipantRef:
        """The ref of the fake named ``name`` (a sink, or ``<sink>#<index>``)."""
        return self._refs[name]

    @property
    def refs(self) -> list[ParticipantRef]:
        return [self.ref(name) for name in self.sinks]

    def __getitem__(self, name: str) -> FakeSink:
        return self.sinks[name]

    def connect(self, ref: ParticipantRef) -> ParticipantConnection:
        return FakeParticipantConnection(ref, self.sinks[ref.name])


def _txn(
    message: participant_pb2.PrepareTransactionRequest
    | participant_pb2.CommitPreparedTransactionRequest
    | participant_pb2.AbortPreparedTransactionRequest,
) -> TransactionId:
    return TransactionId(message.id.job, message.id.batch)


class FakeParticipantServicer(participant_pb2_grpc.ParticipantServicer):
    """participant.proto over :class:`FakeSink` objects (a no vote is a response with ``vote_commit=false``)."""

    def __init__(self, sinks: dict[str, FakeSink]) -> None:
        self._sinks = sinks

    def _sink(self, name: str, context: grpc.ServicerContext) -> FakeSink:
        sink = self._sinks.get(name)
        if sink is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no sink {name!r} here")
        assert sink is not None
        return sink

    def PrepareTransaction(  # noqa: N802 - gRPC method name
        self, request: participant_pb2.PrepareTransactionRequest, context: grpc.ServicerContext
    ) -> participant_pb2.PrepareTransactionResponse:
        sink = self._sink(request.sink, context)
        files = files_from_proto(request.files)
        with sink._changed:
            sink.bindings_seen.append(("prepare", _txn(request), tuple(bindings_from_proto(request.bindings))))
            sink.files_seen[_txn(request)] = tuple(files)
        try:
            vote = sink.prepare(_txn(request), files)
        except ParticipantUnavailable as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        return participant_pb2.PrepareTransactionResponse(
            vote_commit=vote.vote_commit, reason=vote.reason, rows=vote.rows
        )

    def CommitPreparedTransaction(  # noqa: N802
        self, request: participant_pb2.CommitPreparedTransactionRequest, context: grpc.ServicerContext
    ) -> participant_pb2.CommitPreparedTransactionResponse:
        sink = self._sink(request.sink, context)
        try:
            sink.commit(_txn(request), files_from_proto(request.files))
        except ParticipantUnavailable as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        return participant_pb2.CommitPreparedTransactionResponse()

    def PrepareBindings(  # noqa: N802
        self, request: participant_pb2.PrepareBindingsRequest, context: grpc.ServicerContext
    ) -> participant_pb2.PrepareBindingsResponse:
        sink = self._sink(request.sink, context)
        try:
            sink.prepare_bindings(request.job, bindings_from_proto(request.bindings))
        except ParticipantUnavailable as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        except BindingsRefused as exc:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, exc.reason)
        return participant_pb2.PrepareBindingsResponse()

    def AbortPreparedTransaction(  # noqa: N802
        self, request: participant_pb2.AbortPreparedTransactionRequest, context: grpc.ServicerContext
    ) -> participant_pb2.AbortPreparedTransactionResponse:
        sink = self._sink(request.sink, context)
        try:
            sink.abort(_txn(request))
        except ParticipantUnavailable as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        return participant_pb2.AbortPreparedTransactionResponse()

    def ListPreparedTransactions(  # noqa: N802
        self, request: participant_pb2.ListPreparedTransactionsRequest, context: grpc.ServicerContext
    ) -> participant_pb2.ListPreparedTransactionsResponse:
        prepared = [
            participant_pb2.PreparedTransaction(sink=name, id={"job": txn.job, "batch": txn.batch})
            for name, sink in self._sinks.items()
            if not request.sink or request.sink == name
            for txn in list(sink.prepared)
        ]
        return participant_pb2.ListPreparedTransactionsResponse(transactions=prepared)


class FakeParticipantServer:
    """A real gRPC participant server (in this process) hosting fake sinks; restartable on the same port."""

    def __init__(self, names: Iterable[str], host: str = "127.0.0.1", port: int = 0) -> None:
        self.sinks = {name: FakeSink(name) for name in names}
        self.host = host
        self.port = port
        self._server: grpc.Server | None = None

    @property
    def target(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def refs(self) -> list[ParticipantRef]:
        return [ParticipantRef(name, self.target) for name in self.sinks]

    def start(self) -> FakeParticipantServer:
        server, self.port = build_server(
            GrpcServerSettings(host=self.host, port=self.port), service_names=[PARTICIPANT_SERVICE], max_workers=8
        )
        participant_pb2_grpc.add_ParticipantServicer_to_server(  # type: ignore[no-untyped-call]
            FakeParticipantServicer(self.sinks), server
        )
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(0).wait(5)
            self._server = None
