"""The generated stubs expose every service and RPC of the v1 contracts."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import descriptor

from onceflow.proto.v1 import (
    connect_pb2,
    connect_pb2_grpc,
    coordinator_pb2,
    coordinator_pb2_grpc,
    ipcount_pb2,
    ipcount_pb2_grpc,
    participant_pb2,
    participant_pb2_grpc,
    results_pb2,
    results_pb2_grpc,
)

EXPECTED = {
    (coordinator_pb2, "TransactionCoordinator"): {
        "RegisterWriter",
        "RegisterParticipants",
        "CommitTransaction",
        "AbortTransaction",
        "GetTransaction",
        "ListTransactions",
        "ResolveTransaction",
    },
    (participant_pb2, "Participant"): {
        "PrepareTransaction",
        "CommitPreparedTransaction",
        "AbortPreparedTransaction",
        "ListPreparedTransactions",
        "ListCommittedBatches",
        "PrepareBindings",
    },
    (connect_pb2, "Connect"): {
        "ListConnectors",
        "CreateConnector",
        "GetConnector",
        "GetConnectorConfig",
        "UpdateConnectorConfig",
        "DeleteConnector",
        "PauseConnector",
        "ResumeConnector",
        "StopConnector",
        "RestartConnector",
        "RestartTask",
        "GetConnectorStatus",
        "ListTasks",
        "GetTaskStatus",
        "GetConnectorOffsets",
        "AlterConnectorOffsets",
        "ResetConnectorOffsets",
        "ListPlugins",
        "ValidateConnectorConfig",
    },
    (results_pb2, "Results"): {
        "ListTables",
        "ListRows",
        "WatchRows",
    },
    # the IP-count example's service, served by its consumer extension beside Results
    (ipcount_pb2, "IpCounts"): {
        "GetIpCounts",
        "GetTopIps",
        "WatchResults",
        "RunAudit",
    },
}


@pytest.mark.parametrize(("module", "service"), list(EXPECTED))
def test_service_has_every_rpc_with_request_response_messages(module: Any, service: str) -> None:
    desc: descriptor.ServiceDescriptor = module.DESCRIPTOR.services_by_name[service]
    assert desc.full_name == f"onceflow.v1.{service}"
    assert {m.name for m in desc.methods} == EXPECTED[(module, service)]
    for method in desc.methods:
        assert method.input_type.name == f"{method.name}Request"
        assert method.output_type.name == f"{method.name}Response"


def test_grpc_stubs_exist_for_every_service() -> None:
    for stubs, service in [
        (coordinator_pb2_grpc, "TransactionCoordinator"),
        (participant_pb2_grpc, "Participant"),
        (connect_pb2_grpc, "Connect"),
        (results_pb2_grpc, "Results"),
        (ipcount_pb2_grpc, "IpCounts"),
    ]:
        assert hasattr(stubs, f"{service}Stub")
        assert hasattr(stubs, f"{service}Servicer")
        assert hasattr(stubs, f"add_{service}Servicer_to_server")


@pytest.mark.parametrize(
    ("module", "service", "name"), [(results_pb2, "Results", "WatchRows"), (ipcount_pb2, "IpCounts", "WatchResults")]
)
def test_watch_rpcs_are_server_streaming(module: Any, service: str, name: str) -> None:
    method = module.DESCRIPTOR.services_by_name[service].methods_by_name[name]
    assert method.server_streaming and not method.client_streaming


def test_messages_round_trip() -> None:
    request = coordinator_pb2.CommitTransactionRequest(job="ipcount", writer_epoch=3, batch=42)
    request.files.add(uri="file:///s/ipcount/42/part-0.avro", count=10, sha256="ab" * 32)
    again = coordinator_pb2.CommitTransactionRequest.FromString(request.SerializeToString())
    assert again == request
    assert again.files[0].count == 10
