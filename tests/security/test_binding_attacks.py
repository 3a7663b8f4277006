"""A binding may not name a sink's own bookkeeping table or topic (issue 22, item 4: "silently lost results").

Attack: a job binds its output to ``onceflow_commits``, the table in which a database sink records
``(sink, job, batch)`` of every committed batch (or to the consumer's offsets table, or an internal
``_onceflow_*`` topic). Its rows corrupt the commit records: another job's batches are then COMMITTED
at the coordinator while none of their rows reach the table.

Expected refusal, with the name, before any batch: the Spark runner refuses the ``[[outputs]]``
binding (InvalidConfig, exit 2); the coordinator's RegisterParticipants fails because the participant
refuses it in PrepareBindings; and the participant refuses it over gRPC on every RPC that carries
bindings (INVALID_ARGUMENT), whoever the client is. Real coordinator and participant servers.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract import ParticipantRef, SinkBinding, SinkMode, TransactionId
from onceflow.contract.clients import CoordinatorClient, ParticipantClient
from onceflow.contract.staging import StagingWriter
from onceflow.coordinator.service import CoordinatorServer
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.core.errors import InvalidConfig
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA
from onceflow.sinks.server import ParticipantSettings
from onceflow.sinks.service import ParticipantServer
from onceflow.spark.api.outputs import bindings_of
from onceflow.spark.job.settings import SparkJobSettings

W0 = 1_700_000_000_000
#: (table, topic) a job must not bind, and the name the refusal must give.
INTERNAL = [
    ("onceflow_commits", ""),
    ("onceflow_pending", ""),
    ("ONCEFLOW_Commits", ""),
    ("consumer_offsets", ""),
    ("iceberg_tables", ""),
    ("", "_onceflow_sink_commits"),
    ("", "_onceflow_coordinator_log"),
    ("", "__consumer_offsets"),
]


def binding(sink: str, table: str = "", topic: str = "") -> SinkBinding:
    keys = ("window_start", "ip")
    return SinkBinding(sink, table=table, topic=topic, mode=SinkMode.UPSERT, keys=keys, schema=IP_COUNT_ARROW_SCHEMA)


def refused(exc: pytest.ExceptionInfo[grpc.RpcError], name: str, code: grpc.StatusCode) -> None:
    assert exc.value.code() == code, exc.value
    assert f"{name!r} is onceflow's own bookkeeping" in (exc.value.details() or "")


@pytest.mark.parametrize(("table", "topic"), INTERNAL)
def test_the_job_runner_refuses_the_binding_at_bind_time(table: str, topic: str) -> None:
    where = {"table": table} if table else {"topic": topic}
    settings = SparkJobSettings.model_validate(
        {
            "entrypoint": "my_jobs.counts:job",
            "participants": [{"sink": "db", "target": "127.0.0.1:1"}],
            "outputs": {"results": [{"sink": "db", "mode": "append", **where}]},
        }
    )
    with pytest.raises(InvalidConfig) as exc:
        bindings_of(settings, {"results": IP_COUNT_ARROW_SCHEMA})
    assert exc.value.setting == "outputs.results[0]"
    assert f"{table or topic!r} is onceflow's own bookkeeping" in str(exc.value)


@dataclass
class Servers:
    coordinator: CoordinatorServer
    participant: ParticipantServer
    db: Path
    staging: Path

    def participant_target(self) -> str:
        return f"127.0.0.1:{self.participant.port}"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    tmp = tmp_path_factory.mktemp("bindings")
    broker = EmbeddedBroker(tmp / "broker", 0).start()
    staging = tmp / "staging"
    staging.mkdir()
    coordinator = CoordinatorServer(
        CoordinatorSettings.model_validate(
            {"server": {"host": "127.0.0.1", "port": 0}, "transaction_log": {"backend": "memory"},
             "staging_root": str(staging)}
        )
    ).start()  # fmt: skip
    sinks: list[dict[str, Any]] = [
        {"name": "db", "kind": "sqlite", "options": {"path": str(tmp / "sink.db")}},
        {"name": "kafka", "kind": "kafka", "options": {
            "kafka": {"bootstrap_servers": broker.bootstrap_servers}, "topic": "bind-results",
            "commits_topic": "bind-commits", "state_dir": str(tmp / "kafka-state")}},
    ]  # fmt: skip
    participant = ParticipantServer(
        ParticipantSettings.model_validate(
            {"server": {"host": "127.0.0.1", "port": 0}, "sinks": sinks, "staging": {"roots": [str(staging)]},
             "coordinator": {"target": f"127.0.0.1:{coordinator.port}"}}
        )
    )  # fmt: skip
    participant.start()
    try:
        yield Servers(coordinator, participant, tmp / "sink.db", staging)
    finally:
        participant.stop()
        coordinator.stop()
        broker.stop()


@pytest.mark.parametrize(("table", "topic"), [("onceflow_commits", ""), ("", "_onceflow_schemas")])
def test_the_coordinator_refuses_the_registration_before_any_batch(servers: Servers, table: str, topic: str) -> None:
    sink = "db" if table else "kafka"
    with CoordinatorClient(f"127.0.0.1:{servers.coordinator.port}", timeout_s=30) as client:
        epoch = client.register_writer("hostile", "w").epoch
        ref = ParticipantRef(sink, servers.participant_target(), (binding(sink, table, topic),))
        with pytest.raises(grpc.RpcError) as exc:
            client.register_participants("hostile", epoch, [ref])
    refused(exc, table or topic, grpc.StatusCode.FAILED_PRECONDITION)
    with sqlite3.connect(servers.db) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(onceflow_commits)")]
    assert columns[:3] == ["sink", "job", "batch"], "the commits table was altered"


@pytest.mark.parametrize(
    ("sink", "table", "topic"),
    [("db", "onceflow_commits", ""), ("db", "consumer_tables", ""), ("kafka", "", "bind-commits"),
     ("kafka", "", "_onceflow_connect_configs")],
)  # fmt: skip
def test_the_participant_refuses_them_on_every_rpc(servers: Servers, sink: str, table: str, topic: str) -> None:
    bad = binding(sink, table, topic)
    name = table or topic
    txn = TransactionId("hostile", 1)
    staged = StagingWriter(str(servers.staging), "hostile", 1).write(
        f"part-{sink}-{name}",
        [{"window_start": W0, "window_end": W0 + 5000, "ip": "10.0.0.1", "count": 1}],
        IP_COUNT_ARROW_SCHEMA,
    )
    with ParticipantClient(servers.participant_target(), timeout_s=30) as client:
        with pytest.raises(grpc.RpcError) as exc:
            client.prepare_bindings(sink, "hostile", [bad])
        refused(exc, name, grpc.StatusCode.INVALID_ARGUMENT)
        with pytest.raises(grpc.RpcError) as exc:
            client.prepare_transaction(sink, txn, [staged], [bad])
        refused(exc, name, grpc.StatusCode.INVALID_ARGUMENT)
        with pytest.raises(grpc.RpcError) as exc:
            client.commit_prepared_transaction(sink, txn, [staged], [bad])
        refused(exc, name, grpc.StatusCode.INVALID_ARGUMENT)
        assert client.list_prepared_transactions(sink) == []
