"""ConnectServicer: the ``onceflow.v1.Connect`` RPCs, each a thin adapter over one herder operation.

Errors: a bad config or argument is INVALID_ARGUMENT naming the setting; an unknown connector or
task is NOT_FOUND; creating an existing connector is ALREADY_EXISTS; altering offsets of a connector
that is not STOPPED is FAILED_PRECONDITION.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import grpc

from onceflow.contract.connect import ConnectorOffset
from onceflow.contract.proto import offset_from_proto, offset_to_proto
from onceflow.core.errors import InvalidConfig
from onceflow.core.grpc import DEFAULT_STATUS_CODES, translate_errors
from onceflow.proto.v1 import connect_pb2 as pb
from onceflow.proto.v1 import connect_pb2_grpc
from onceflow.runtime.admin import convert
from onceflow.runtime.exceptions import (
    ConnectorExists,
    ConnectorNotFound,
    ConnectorNotStopped,
    PluginNotFound,
    TaskNotFound,
)
from onceflow.runtime.herder.admin_ops import AdminOperations

STATUS_CODES: Final[Mapping[type[BaseException], grpc.StatusCode]] = {
    **DEFAULT_STATUS_CODES,
    ConnectorNotFound: grpc.StatusCode.NOT_FOUND,
    TaskNotFound: grpc.StatusCode.NOT_FOUND,
    PluginNotFound: grpc.StatusCode.NOT_FOUND,
    ConnectorExists: grpc.StatusCode.ALREADY_EXISTS,
    ConnectorNotStopped: grpc.StatusCode.FAILED_PRECONDITION,
    TimeoutError: grpc.StatusCode.UNAVAILABLE,
}
_translate = translate_errors(STATUS_CODES)


def _name(value: str, field: str = "name") -> str:
    if not value:
        raise InvalidConfig(field, "is required")
    return value


def _on_connector(operation: str, response: Callable[[], Any]) -> Callable[..., Any]:
    """An RPC that applies the herder's ``operation`` to the connector named and answers ``response()``."""

    def rpc(self: ConnectServicer, request: Any, context: grpc.ServicerContext) -> Any:
        getattr(self.herder, operation)(_name(request.name))
        return response()

    return _translate(rpc)


class ConnectServicer(connect_pb2_grpc.ConnectServicer):
    def __init__(self, herder: AdminOperations) -> None:
        self.herder = herder

    DeleteConnector = _on_connector("delete_connector", pb.DeleteConnectorResponse)
    PauseConnector = _on_connector("pause_connector", pb.PauseConnectorResponse)
    ResumeConnector = _on_connector("resume_connector", pb.ResumeConnectorResponse)
    StopConnector = _on_connector("stop_connector", pb.StopConnectorResponse)

    @_translate
    def ListConnectors(  # noqa: N802 - gRPC method name
        self, request: pb.ListConnectorsRequest, context: grpc.ServicerContext
    ) -> Any:
        names = self.herder.connectors()
        response = pb.ListConnectorsResponse(names=names)
        for name in names:
            if request.expand_status:
                response.statuses.append(convert.connector_status_to_proto(self.herder.connector_status(name)))
            if request.expand_info:
                response.infos.append(convert.connector_info_to_proto(self.herder.connector_info(name)))
        return response

    @_translate
    def CreateConnector(  # noqa: N802 - gRPC method name
        self, request: pb.CreateConnectorRequest, context: grpc.ServicerContext
    ) -> Any:
        state = convert.initial_state_from_proto(request.initial_state)
        info = self.herder.create_connector(_name(request.name), dict(request.config), state)
        return pb.CreateConnectorResponse(connector=convert.connector_info_to_proto(info))

    @_translate
    def GetConnector(  # noqa: N802 - gRPC method name
        self, request: pb.GetConnectorRequest, context: grpc.ServicerContext
    ) -> Any:
        info = self.herder.connector_info(_name(request.name))
        return pb.GetConnectorResponse(connector=convert.connector_info_to_proto(info))

    @_translate
    def GetConnectorConfig(  # noqa: N802 - gRPC method name
        self, request: pb.GetConnectorConfigRequest, context: grpc.ServicerContext
    ) -> Any:
        return pb.GetConnectorConfigResponse(config=self.herder.connector_config(_name(request.name)))

    @_translate
    def UpdateConnectorConfig(  # noqa: N802 - gRPC method name
        self, request: pb.UpdateConnectorConfigRequest, context: grpc.ServicerContext
    ) -> Any:
        info, created = self.herder.put_connector_config(_name(request.name), dict(request.config))
        return pb.UpdateConnectorConfigResponse(connector=convert.connector_info_to_proto(info), created=created)

    @_translate
    def RestartConnector(  # noqa: N802 - gRPC method name
        self, request: pb.RestartConnectorRequest, context: grpc.ServicerContext
    ) -> Any:
        status = self.herder.restart_connector(_name(request.name), request.include_tasks, request.only_failed)
        return pb.RestartConnectorResponse(status=convert.connector_status_to_proto(status))

    @_translate
    def RestartTask(  # noqa: N802 - gRPC method name
        self, request: pb.RestartTaskRequest, context: grpc.ServicerContext
    ) -> Any:
        self.herder.restart_task(_name(request.connector, "connector"), request.task)
        return pb.RestartTaskResponse()

    @_translate
    def GetConnectorStatus(  # noqa: N802 - gRPC method name
        self, request: pb.GetConnectorStatusRequest, context: grpc.ServicerContext
    ) -> Any:
        status = self.herder.connector_status(_name(request.name))
        return pb.GetConnectorStatusResponse(status=convert.connector_status_to_proto(status))

    @_translate
    def ListTasks(  # noqa: N802 - gRPC method name
        self, request: pb.ListTasksRequest, context: grpc.ServicerContext
    ) -> Any:
        configs = self.herder.task_configs(_name(request.connector, "connector"))
        return pb.ListTasksResponse(tasks=[pb.TaskInfo(id=i, config=c) for i, c in enumerate(configs)])

    @_translate
    def GetTaskStatus(  # noqa: N802 - gRPC method name
        self, request: pb.GetTaskStatusRequest, context: grpc.ServicerContext
    ) -> Any:
        status = self.herder.task_status(_name(request.connector, "connector"), request.task)
        return pb.GetTaskStatusResponse(status=convert.task_status_to_proto(status))

    @_translate
    def GetConnectorOffsets(  # noqa: N802 - gRPC method name
        self, request: pb.GetConnectorOffsetsRequest, context: grpc.ServicerContext
    ) -> Any:
        offsets = self.herder.connector_offsets(_name(request.name))
        return pb.GetConnectorOffsetsResponse(
            offsets=[offset_to_proto(ConnectorOffset(partition, offset)) for partition, offset in offsets]
        )

    @_translate
    def AlterConnectorOffsets(  # noqa: N802 - gRPC method name
        self, request: pb.AlterConnectorOffsetsRequest, context: grpc.ServicerContext
    ) -> Any:
        offsets = [
            (dict(item.partition), dict(item.offset) if item.offset is not None else None)
            for item in map(offset_from_proto, request.offsets)
        ]
        if not offsets:
            raise InvalidConfig("offsets", "at least one partition is required")
        return pb.AlterConnectorOffsetsResponse(message=self.herder.alter_offsets(_name(request.name), offsets))

    @_translate
    def ResetConnectorOffsets(  # noqa: N802 - gRPC method name
        self, request: pb.ResetConnectorOffsetsRequest, context: grpc.ServicerContext
    ) -> Any:
        return pb.ResetConnectorOffsetsResponse(message=self.herder.reset_offsets(_name(request.name)))

    @_translate
    def ListPlugins(  # noqa: N802 - gRPC method name
        self, request: pb.ListPluginsRequest, context: grpc.ServicerContext
    ) -> Any:
        return pb.ListPluginsResponse(plugins=[convert.plugin_to_proto(p) for p in self.herder.plugin_infos()])

    @_translate
    def ValidateConnectorConfig(  # noqa: N802 - gRPC method name
        self, request: pb.ValidateConnectorConfigRequest, context: grpc.ServicerContext
    ) -> Any:
        return convert.validation_to_proto(self.herder.validate(request.plugin, dict(request.config)))
