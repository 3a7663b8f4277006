"""One authorization rule on every gRPC service (onceflow.core.grpc.auth): with ``server.auth`` set, a
mutating RPC without a token is UNAUTHENTICATED, with a wrong one PERMISSION_DENIED, and with the right
one (sent by ``open_channel`` from ``tls.token_file``) it runs; read-only RPCs stay open. Before, anyone
who could reach a port could register writers, commit transactions, create connectors or run audits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.consumer.service import ConsumerService
from onceflow.consumer.settings import ConsumerSettings
from onceflow.contract import TransactionId
from onceflow.contract.clients import CoordinatorClient, ParticipantClient
from onceflow.coordinator.service import CoordinatorServer
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.core.grpc import open_channel
from onceflow.core.settings import TlsSettings
from onceflow.ipcount.api import GeneratorTruth, IpCountsClient
from onceflow.proto.v1 import connect_pb2, connect_pb2_grpc
from onceflow.runtime.config.worker_settings import WorkerSettings
from onceflow.runtime.service import ConnectWorkerService
from onceflow.sinks.server import ParticipantSettings
from onceflow.sinks.service import ParticipantServer

TOKEN = "s3cret-token"
#: (a mutating call, a read-only call) of a service, given its client.
Calls = tuple[Callable[[Any], Any], Callable[[Any], Any]]
#: A service's client on ``target`` with the given TLS settings (bearer token), closed on exit.
Connect = Callable[[str, TlsSettings | None], contextlib.AbstractContextManager[Any]]


def _stub_of(stub_class: Callable[[Any], Any]) -> Connect:
    """For the services without a typed client: a stub on a channel from ``open_channel``."""

    @contextlib.contextmanager
    def connect(target: str, tls: TlsSettings | None) -> Iterator[Any]:
        with open_channel(target, tls) as channel:
            yield stub_class(channel)

    return connect


def _auth(tmp_path: Path) -> dict[str, Any]:
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    return {"host": "127.0.0.1", "port": 0, "auth": {"token_file": str(token)}}


@pytest.fixture
def services(broker: EmbeddedBroker, tmp_path: Path) -> Iterator[dict[str, tuple[int, Connect, Calls]]]:
    """Every onceflow gRPC service, in-process, with server.auth on: name -> (port, client, calls)."""
    server = _auth(tmp_path)
    bootstrap = broker.bootstrap_servers
    coordinator = CoordinatorServer(
        CoordinatorSettings.model_validate({"server": server, "transaction_log": {"backend": "memory"}})
    ).start()
    participant = ParticipantServer(
        ParticipantSettings.model_validate(
            {"server": server, "coordinator": {"target": f"127.0.0.1:{coordinator.port}"},
             "sinks": [{"name": "db", "kind": "sqlite", "options": {"path": str(tmp_path / "p.db")}}],
             "staging": {"roots": [str(tmp_path / "staging")]}}
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
            "coordinator": (coordinator.port, CoordinatorClient, (
                lambda c: c.register_writer("j", "w", timeout_s=10),
                lambda c: c.list_transactions("j", timeout_s=10),
            )),
            "participant": (participant.port, ParticipantClient, (
                lambda c: c.abort_prepared_transaction("db", TransactionId("j", 1), timeout_s=10),
                lambda c: c.list_prepared_transactions("db", timeout_s=10),
            )),
            # the consumer's server: its Results service has only reads (ListTables, ListRows, WatchRows);
            # the IP-count example's service, added by its extension, has RunAudit
            "ipcount": (consumer.port, IpCountsClient, (
                lambda c: c.run_audit(GeneratorTruth(seed=1, count=1), timeout_s=60),
                lambda c: c.get_top_ips(limit=1, timeout_s=10),
            )),
            "connect": (worker.port, _stub_of(connect_pb2_grpc.ConnectStub), (
                lambda s: s.DeleteConnector(connect_pb2.DeleteConnectorRequest(name="nope"), timeout=10),
                lambda s: s.ListConnectors(connect_pb2.ListConnectorsRequest(), timeout=10),
            )),
        }  # fmt: skip
    finally:
        worker.stop()
        consumer.stop()
        participant.stop()
        coordinator.stop()


def _code(call: Callable[[Any], Any], client: Any) -> grpc.StatusCode:
    try:
        call(client)
    except grpc.RpcError as exc:
        code: grpc.StatusCode = exc.code()
        return code
    return grpc.StatusCode.OK


def test_every_service_applies_the_same_rule(services: dict[str, tuple[int, Connect, Calls]], tmp_path: Path) -> None:
    wrong = tmp_path / "wrong-token"
    wrong.write_text("guess\n")
    right = tmp_path / "right-token"
    right.write_text(TOKEN)
    for name, (port, connect, (mutating, read_only)) in services.items():
        target = f"127.0.0.1:{port}"
        with connect(target, None) as plain:
            assert _code(mutating, plain) == grpc.StatusCode.UNAUTHENTICATED, name
            assert _code(read_only, plain) == grpc.StatusCode.OK, name
        with connect(target, TlsSettings(token_file=str(wrong))) as client:
            assert _code(mutating, client) == grpc.StatusCode.PERMISSION_DENIED, name
        with connect(target, TlsSettings(token_file=str(right))) as client:
            code = _code(mutating, client)
            assert code not in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED), (name, code)
