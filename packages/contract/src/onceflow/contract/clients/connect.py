"""The typed client of ``onceflow.v1.Connect`` (connect.proto), the connector runtime's admin API."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from onceflow.contract.clients.base import ServiceClient
from onceflow.contract.connect import (
    ConfigUpdate,
    ConfigValidationResult,
    ConnectorInfo,
    ConnectorListing,
    ConnectorOffset,
    ConnectorStateInfo,
    PluginInfo,
    TaskInfo,
    TaskStateInfo,
)
from onceflow.contract.proto import (
    connector_info_from_proto,
    connector_state_from_proto,
    listing_from_proto,
    offset_from_proto,
    offset_to_proto,
    plugin_from_proto,
    task_state_from_proto,
    validation_from_proto,
    work_state_to_proto,
)
from onceflow.proto.v1 import connect_pb2 as pb
from onceflow.proto.v1 import connect_pb2_grpc


class ConnectClient(ServiceClient[connect_pb2_grpc.ConnectStub]):
    """Calls on a connect worker at ``target``, one method per RPC of Kafka Connect's REST API (over
    gRPC), each with a deadline (``timeout_s`` per call, or the client's), answering the contract's
    values (:mod:`onceflow.contract.connect`). A failed call raises its typed error
    (:mod:`~onceflow.contract.clients.errors`): an unknown connector is a ``RequestRefused``
    with NOT_FOUND, a config the worker refuses one with INVALID_ARGUMENT naming the setting.
    """

    stub_class = connect_pb2_grpc.ConnectStub
    default_timeout_s = 60.0

    def list_connectors(
        self, *, expand_status: bool = False, expand_info: bool = False, timeout_s: float | None = None
    ) -> ConnectorListing:
        request = pb.ListConnectorsRequest(expand_status=expand_status, expand_info=expand_info)
        return listing_from_proto(self._unary(self._stub, "ListConnectors", request, timeout_s))

    def create_connector(
        self, name: str, config: Mapping[str, str], *, initial_state: str = "RUNNING", timeout_s: float | None = None
    ) -> ConnectorInfo:
        """Create ``name`` (KIP-980 ``initial_state``: RUNNING, PAUSED or STOPPED; ValueError otherwise)."""
        request = pb.CreateConnectorRequest(name=name, config=config, initial_state=work_state_to_proto(initial_state))
        return connector_info_from_proto(self._unary(self._stub, "CreateConnector", request, timeout_s).connector)

    def get_connector(self, name: str, *, timeout_s: float | None = None) -> ConnectorInfo:
        response = self._unary(self._stub, "GetConnector", pb.GetConnectorRequest(name=name), timeout_s)
        return connector_info_from_proto(response.connector)

    def get_connector_config(self, name: str, *, timeout_s: float | None = None) -> dict[str, str]:
        response = self._unary(self._stub, "GetConnectorConfig", pb.GetConnectorConfigRequest(name=name), timeout_s)
        return dict(response.config)

    def update_connector_config(
        self, name: str, config: Mapping[str, str], *, timeout_s: float | None = None
    ) -> ConfigUpdate:
        """Create ``name`` or replace its config."""
        request = pb.UpdateConnectorConfigRequest(name=name, config=config)
        response = self._unary(self._stub, "UpdateConnectorConfig", request, timeout_s)
        return ConfigUpdate(connector_info_from_proto(response.connector), response.created)

    def delete_connector(self, name: str, *, timeout_s: float | None = None) -> None:
        self._unary(self._stub, "DeleteConnector", pb.DeleteConnectorRequest(name=name), timeout_s)

    def pause_connector(self, name: str, *, timeout_s: float | None = None) -> None:
        self._unary(self._stub, "PauseConnector", pb.PauseConnectorRequest(name=name), timeout_s)

    def resume_connector(self, name: str, *, timeout_s: float | None = None) -> None:
        self._unary(self._stub, "ResumeConnector", pb.ResumeConnectorRequest(name=name), timeout_s)

    def stop_connector(self, name: str, *, timeout_s: float | None = None) -> None:
        """Stop the connector's tasks and keep its config (KIP-875: then its offsets may be altered)."""
        self._unary(self._stub, "StopConnector", pb.StopConnectorRequest(name=name), timeout_s)

    def restart_connector(
        self, name: str, *, include_tasks: bool = False, only_failed: bool = False, timeout_s: float | None = None
    ) -> ConnectorStateInfo:
        """Restart the connector (and its tasks, or its failed ones: KIP-745); the state the worker answers
        after the restart."""
        request = pb.RestartConnectorRequest(name=name, include_tasks=include_tasks, only_failed=only_failed)
        response = self._unary(self._stub, "RestartConnector", request, timeout_s)
        return connector_state_from_proto(response.status)

    def restart_task(self, connector: str, task: int, *, timeout_s: float | None = None) -> None:
        self._unary(self._stub, "RestartTask", pb.RestartTaskRequest(connector=connector, task=task), timeout_s)

    def get_connector_status(self, name: str, *, timeout_s: float | None = None) -> ConnectorStateInfo:
        response = self._unary(self._stub, "GetConnectorStatus", pb.GetConnectorStatusRequest(name=name), timeout_s)
        return connector_state_from_proto(response.status)

    def list_tasks(self, connector: str, *, timeout_s: float | None = None) -> list[TaskInfo]:
        response = self._unary(self._stub, "ListTasks", pb.ListTasksRequest(connector=connector), timeout_s)
        return [TaskInfo(t.id, dict(t.config)) for t in response.tasks]

    def get_task_status(self, connector: str, task: int, *, timeout_s: float | None = None) -> TaskStateInfo:
        request = pb.GetTaskStatusRequest(connector=connector, task=task)
        return task_state_from_proto(self._unary(self._stub, "GetTaskStatus", request, timeout_s).status)

    def get_connector_offsets(self, name: str, *, timeout_s: float | None = None) -> list[ConnectorOffset]:
        request = pb.GetConnectorOffsetsRequest(name=name)
        return [
            offset_from_proto(o) for o in self._unary(self._stub, "GetConnectorOffsets", request, timeout_s).offsets
        ]

    def alter_connector_offsets(
        self, name: str, offsets: Sequence[ConnectorOffset], *, timeout_s: float | None = None
    ) -> str:
        """Set (or, with ``offset`` None, reset) source offsets of a STOPPED connector (KIP-875); the
        worker's message."""
        request = pb.AlterConnectorOffsetsRequest(name=name, offsets=[offset_to_proto(o) for o in offsets])
        return str(self._unary(self._stub, "AlterConnectorOffsets", request, timeout_s).message)

    def reset_connector_offsets(self, name: str, *, timeout_s: float | None = None) -> str:
        request = pb.ResetConnectorOffsetsRequest(name=name)
        return str(self._unary(self._stub, "ResetConnectorOffsets", request, timeout_s).message)

    def list_plugins(self, *, include_all: bool = False, timeout_s: float | None = None) -> list[PluginInfo]:
        response = self._unary(self._stub, "ListPlugins", pb.ListPluginsRequest(include_all=include_all), timeout_s)
        return [plugin_from_proto(p) for p in response.plugins]

    def validate_connector_config(
        self, plugin: str, config: Mapping[str, str], *, timeout_s: float | None = None
    ) -> ConfigValidationResult:
        request = pb.ValidateConnectorConfigRequest(plugin=plugin, config=config)
        return validation_from_proto(self._unary(self._stub, "ValidateConnectorConfig", request, timeout_s))
