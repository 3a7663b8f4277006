"""One authorization rule on every gRPC service (onceflow.core.grpc.auth): with ``server.auth`` set, a
mutating RPC without a token is UNAUTHENTICATED, with a wrong one PERMISSION_DENIED, and with the right
one (sent by ``open_channel`` from ``tls.token_file``) it runs; read-only RPCs stay open. Before, anyone
who could reach a port could register writers, commit transactions, create connectors or run audits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.consumer.service import ConsumerService
from onceflow.consumer.settings import ConsumerSettings
from onceflow.coordinator.service.server import CoordinatorServer
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.core.grpc import open_channel
from onceflow.core.settings import TlsSettings
from onceflow.proto.v1 import (
    connect_pb2,
    connect_pb2_grpc,
    coordinator_pb2,
    coordinator_pb2_grpc,
    participant_pb2,
    participant_pb2_grpc,
    results_pb2,
    results_pb2_grpc,
)
from onceflow.runtime.config.worker_settings import WorkerSettings
from onceflow.runtime.service import ConnectWorkerService
from onceflow.sinks.server import ParticipantServer, ParticipantSettings

TOKEN = "s3cret-token"
#: (service, a mutating call, a read-only call) for each service, given a stub.
Calls = tuple[Callable[[Any], Any], Callable[[Any], Any]]


def _auth(tmp_path: Path) -> dict[str, Any]:
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    return {"host": "127.0.0.1", "port": 0, "auth": {"token_file": str(token)}}


@pytest.fixture
def services(broker: EmbeddedBroker, tmp_path: Path) -> Iterator[dict[str, tuple[int, Any, Calls]]]:
    """Every onceflow gRPC service, in-process, with server.auth on: name -> (port, stub class, calls)."""
    server = _auth(tmp_path)
    bootstrap = broker.bootstrap_servers
    coordinator = CoordinatorServer(
        CoordinatorSettings.model_validate({"server": server, "transaction_log": {"backend": "memory"}})
    ).start()
    participant = ParticipantServer(
        ParticipantSettings.model_validate(
            {"server": server, "coordinator": {"target": f"127.0.0.1:{coordinator.port}"},
             "sinks": [{"name": "db", "kind": "sqlite", "options": {"path": str(tmp_path / "p.db")}}]}
        )
    )  # fmt: skip
    participant.start()
    consumer = ConsumerService(
        ConsumerSettings.model_validate(
            {"kafka": {"bootstrap_servers": bootstrap}, "server": server, "metrics": {"port": 0},
             "store": {"path": str(tmp_path / "results.db")}, "consumer": {"topic": "auth-results"}}
        )
    ).start()  # fmt: skip
    worker = ConnectWorkerService(
        WorkerSettings.model_validate({"kafka": {"bootstrap_servers": bootstrap}, "server": server})
    ).start()
    try:
        yield {
            "coordinator": (coordinator.port, coordinator_pb2_grpc.TransactionCoordinatorStub, (
                lambda s: s.RegisterWriter(coordinator_pb2.RegisterWriterRequest(job="j", writer_id="w"), timeout=10),
                lambda s: s.ListTransactions(coordinator_pb2.ListTransactionsRequest(job="j"), timeout=10),
            )),
            "participant": (participant.port, participant_pb2_grpc.ParticipantStub, (
                lambda s: s.AbortPreparedTransaction(participant_pb2.AbortPreparedTransactionRequest(
                    sink="db", id=_txn_id()), timeout=10),
                lambda s: s.ListPreparedTransactions(participant_pb2.ListPreparedTransactionsRequest(sink="db"),
                                                     timeout=10),
            )),
            "results": (consumer.port, results_pb2_grpc.ResultsStub, (
                lambda s: s.RunAudit(results_pb2.RunAuditRequest(generator=results_pb2.GeneratorTruth(seed=1, count=1)),
                                     timeout=60),
                lambda s: s.GetTopIps(results_pb2.GetTopIpsRequest(limit=1), timeout=10),
            )),
            "connect": (worker.port, connect_pb2_grpc.ConnectStub, (
                lambda s: s.DeleteConnector(connect_pb2.DeleteConnectorRequest(name="nope"), timeout=10),
                lambda s: s.ListConnectors(connect_pb2.ListConnectorsRequest(), timeout=10),
            )),
        }  # fmt: skip
    finally:
        worker.stop()
        consumer.stop()
        participant.stop()
        coordinator.stop()


def _txn_id() -> Any:
    from onceflow.proto.v1 import common_pb2

    return common_pb2.TransactionId(job="j", batch=1)


def _code(call: Callable[[Any], Any], stub: Any) -> grpc.StatusCode:
    try:
        call(stub)
    except grpc.RpcError as exc:
        code: grpc.StatusCode = exc.code()
        return code
    return grpc.StatusCode.OK


def test_every_service_applies_the_same_rule(services: dict[str, tuple[int, Any, Calls]], tmp_path: Path) -> None:
    wrong = tmp_path / "wrong-token"
    wrong.write_text("guess\n")
    right = tmp_path / "right-token"
    right.write_text(TOKEN)
    for name, (port, stub_class, (mutating, read_only)) in services.items():
        target = f"127.0.0.1:{port}"
        with open_channel(target) as plain:
            assert _code(mutating, stub_class(plain)) == grpc.StatusCode.UNAUTHENTICATED, name
            assert _code(read_only, stub_class(plain)) == grpc.StatusCode.OK, name
        with open_channel(target, TlsSettings(token_file=str(wrong))) as channel:
            assert _code(mutating, stub_class(channel)) == grpc.StatusCode.PERMISSION_DENIED, name
        with open_channel(target, TlsSettings(token_file=str(right))) as channel:
            code = _code(mutating, stub_class(channel))
            assert code not in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED), (name, code)
