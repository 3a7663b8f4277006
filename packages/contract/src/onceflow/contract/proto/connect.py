"""The connect worker's admin values (``connect.proto``, :mod:`onceflow.contract.connect`) to and from
their messages: each value named by its module (``connect.ConnectorInfo``) beside its message
(``connect_pb2.ConnectorInfo``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from google.protobuf import json_format, struct_pb2

from onceflow.contract import connect
from onceflow.proto.v1 import connect_pb2


def _integral(value: Any) -> Any:
    """Struct numbers are doubles; give whole numbers back as ints (offsets are positions)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def struct_to_dict(struct: struct_pb2.Struct) -> dict[str, Any]:
    """A JSON object from a Struct, whole numbers as ints."""
    result: dict[str, Any] = _integral(json_format.MessageToDict(struct))
    return result


def dict_to_struct(value: Mapping[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


def connector_type_name(value: int) -> str:
    """``source`` or ``sink`` (``unspecified`` for 0), as Kafka Connect's REST API spells a type."""
    return connect_pb2.ConnectorType.Name(value).removeprefix("CONNECTOR_TYPE_").lower()


def work_state_name(value: int) -> str:
    """``RUNNING``, ``PAUSED``, ... (``UNSPECIFIED`` for 0), as Kafka Connect's REST API spells a state."""
    return connect_pb2.WorkState.Name(value).removeprefix("WORK_STATE_")


def work_state_to_proto(name: str) -> connect_pb2.WorkState:
    """The WorkState of ``RUNNING``, ``paused``, ...; ValueError naming the states for anything else."""
    try:
        return cast(connect_pb2.WorkState, connect_pb2.WorkState.Value(f"WORK_STATE_{name.upper()}"))
    except ValueError:
        names = ", ".join(work_state_name(v) for v in connect_pb2.WorkState.values() if v)
        raise ValueError(f"unknown connector state {name!r} (one of {names})") from None


def connector_info_from_proto(message: connect_pb2.ConnectorInfo) -> connect.ConnectorInfo:
    return connect.ConnectorInfo(
        name=message.name,
        config=dict(message.config),
        tasks=tuple(message.tasks),
        type=connector_type_name(message.type),
    )


def task_state_from_proto(message: connect_pb2.TaskStatus) -> connect.TaskStateInfo:
    return connect.TaskStateInfo(
        id=message.id,
        state=work_state_name(message.state),
        worker_id=message.worker_id,
        trace=message.trace,
        transactional_id=message.transactional_id,
        producer_id=message.producer_id,
        producer_epoch=message.producer_epoch,
        transactions_committed=message.transactions_committed,
        records_produced=message.records_produced,
    )


def connector_state_from_proto(message: connect_pb2.ConnectorStatus) -> connect.ConnectorStateInfo:
    return connect.ConnectorStateInfo(
        name=message.name,
        state=work_state_name(message.state),
        worker_id=message.worker_id,
        type=connector_type_name(message.type),
        trace=message.trace,
        tasks=tuple(task_state_from_proto(t) for t in message.tasks),
    )


def listing_from_proto(message: connect_pb2.ListConnectorsResponse) -> connect.ConnectorListing:
    return connect.ConnectorListing(
        names=tuple(message.names),
        statuses=tuple(connector_state_from_proto(s) for s in message.statuses),
        infos=tuple(connector_info_from_proto(i) for i in message.infos),
    )


def offset_to_proto(offset: connect.ConnectorOffset) -> connect_pb2.ConnectorOffset:
    message = connect_pb2.ConnectorOffset(partition=dict_to_struct(offset.partition))
    if offset.offset is not None:
        message.offset.CopyFrom(dict_to_struct(offset.offset))
    return message


def offset_from_proto(message: connect_pb2.ConnectorOffset) -> connect.ConnectorOffset:
    offset = struct_to_dict(message.offset) if message.HasField("offset") else None
    return connect.ConnectorOffset(partition=struct_to_dict(message.partition), offset=offset)


def plugin_from_proto(message: connect_pb2.PluginInfo) -> connect.PluginInfo:
    return connect.PluginInfo(
        name=message.name,
        type=connector_type_name(message.type),
        version=message.version,
        entry_point=message.entry_point,
    )


def validation_from_proto(message: connect_pb2.ValidateConnectorConfigResponse) -> connect.ConfigValidationResult:
    return connect.ConfigValidationResult(
        error_count=message.error_count,
        configs=tuple(connect.ConfigValidation(c.name, c.value, tuple(c.errors)) for c in message.configs),
    )
