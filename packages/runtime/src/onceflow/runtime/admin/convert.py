"""Domain objects to and from ``onceflow.v1`` connect messages."""

from __future__ import annotations

from typing import Any

from onceflow.proto.v1 import connect_pb2 as pb
from onceflow.runtime.api.connector import ConnectorType
from onceflow.runtime.herder.admin_ops import ConnectorInfo, ValidationResult
from onceflow.runtime.plugins import PluginInfo
from onceflow.runtime.status import ConnectorStatus, TargetState, TaskStatus, WorkState

_TYPES = {ConnectorType.SOURCE: pb.CONNECTOR_TYPE_SOURCE, ConnectorType.SINK: pb.CONNECTOR_TYPE_SINK}
_STATES: dict[WorkState, Any] = {state: pb.WorkState.Value(f"WORK_STATE_{state.value}") for state in WorkState}


def initial_state_from_proto(value: int) -> TargetState:
    """KIP-980 initial state: RUNNING (or unspecified), PAUSED or STOPPED."""
    if value == pb.WORK_STATE_PAUSED:
        return TargetState.PAUSED
    if value == pb.WORK_STATE_STOPPED:
        return TargetState.STOPPED
    return TargetState.STARTED


def connector_info_to_proto(info: ConnectorInfo) -> pb.ConnectorInfo:
    return pb.ConnectorInfo(name=info.name, config=info.config, tasks=info.tasks, type=_TYPES[info.type])


def task_status_to_proto(status: TaskStatus) -> pb.TaskStatus:
    producer = status.producer
    return pb.TaskStatus(
        id=status.id.task,
        state=_STATES[status.state],
        worker_id=status.worker_id,
        trace=status.trace,
        transactional_id=producer.transactional_id,
        producer_id=producer.producer_id,
        producer_epoch=producer.producer_epoch,
        transactions_committed=producer.transactions_committed,
        records_produced=producer.records_produced,
    )


def connector_status_to_proto(status: ConnectorStatus) -> pb.ConnectorStatus:
    return pb.ConnectorStatus(
        name=status.name,
        state=_STATES[status.state],
        worker_id=status.worker_id,
        trace=status.trace,
        tasks=[task_status_to_proto(t) for t in status.tasks],
        type=_TYPES[status.type],
    )


def plugin_to_proto(plugin: PluginInfo) -> pb.PluginInfo:
    return pb.PluginInfo(
        name=plugin.name, type=_TYPES[plugin.connector_type], version=plugin.version, entry_point=plugin.entry_point
    )


def validation_to_proto(result: ValidationResult) -> pb.ValidateConnectorConfigResponse:
    return pb.ValidateConnectorConfigResponse(
        error_count=result.error_count,
        configs=[pb.ConfigValidation(name=c.name, value=c.value or "", errors=c.errors) for c in result.configs],
    )
