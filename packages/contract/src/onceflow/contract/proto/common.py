"""The values every service shares (``common.proto``) to and from their messages: sink bindings, staged
files, shards, transaction ids and transaction states."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from onceflow.contract.bindings import DEFAULT_OUTPUT, SinkBinding, SinkMode, ValueFormat
from onceflow.contract.schema import schema_from_bytes, schema_to_bytes
from onceflow.contract.shards import Shard
from onceflow.contract.staging.files import StagedFile
from onceflow.contract.state import TransactionState
from onceflow.contract.txn import TransactionId
from onceflow.proto.v1 import common_pb2


def binding_to_proto(binding: SinkBinding) -> common_pb2.SinkBinding:
    return common_pb2.SinkBinding(
        sink=binding.sink,
        output=binding.output,
        table=binding.table,
        topic=binding.topic,
        mode=binding.mode.value,
        keys=list(binding.keys),
        value_format=binding.value_format.value,
        headers=list(binding.headers),
        record_name=binding.record_name,
        arrow_schema=schema_to_bytes(binding.schema) if binding.schema is not None else b"",
    )


def binding_from_proto(message: common_pb2.SinkBinding) -> SinkBinding:
    """A :class:`SinkBinding`; ValueError (an ``InvalidBinding``) names the field that is wrong."""
    try:
        mode = SinkMode(message.mode or SinkMode.UPSERT)
    except ValueError:
        raise ValueError(f"binding mode {message.mode!r} must be one of {', '.join(SinkMode)}") from None
    try:
        value_format = ValueFormat(message.value_format or ValueFormat.AVRO)
    except ValueError:
        raise ValueError(
            f"binding value_format {message.value_format!r} must be one of {', '.join(ValueFormat)}"
        ) from None
    schema = schema_from_bytes(message.arrow_schema) if message.arrow_schema else None
    return SinkBinding(
        sink=message.sink,
        output=message.output or DEFAULT_OUTPUT,
        table=message.table,
        topic=message.topic,
        mode=mode,
        keys=tuple(message.keys),
        value_format=value_format,
        headers=tuple(message.headers),
        record_name=message.record_name,
        schema=schema,
    )


def bindings_from_proto(messages: Iterable[common_pb2.SinkBinding]) -> list[SinkBinding]:
    return [binding_from_proto(m) for m in messages]


def bindings_to_proto(bindings: Iterable[SinkBinding]) -> list[common_pb2.SinkBinding]:
    return [binding_to_proto(b) for b in bindings]


def file_to_proto(file: StagedFile) -> common_pb2.StagedFile:
    output = "" if file.output == DEFAULT_OUTPUT else file.output
    return common_pb2.StagedFile(uri=file.uri, count=file.count, sha256=file.sha256, output=output)


def file_from_proto(message: common_pb2.StagedFile) -> StagedFile:
    return StagedFile(
        uri=message.uri, count=message.count, sha256=message.sha256, output=message.output or DEFAULT_OUTPUT
    )


def files_to_proto(files: Iterable[StagedFile]) -> list[common_pb2.StagedFile]:
    return [file_to_proto(f) for f in files]


def files_from_proto(messages: Iterable[common_pb2.StagedFile]) -> list[StagedFile]:
    return [file_from_proto(m) for m in messages]


def shard_to_proto(shard: Shard) -> common_pb2.Shard | None:
    """The ``shard`` field of a request or participant ref: None (left unset) for an unsharded sink."""
    return common_pb2.Shard(index=shard.index, count=shard.count) if shard.is_sharded else None


def shard_from_proto(message: common_pb2.Shard | None) -> Shard:
    """The shard a request or ref names (unset, or a count of 0: the whole sink); ValueError for an
    index or count out of range."""
    if message is None or message.count == 0:
        if message is not None and message.index:
            raise ValueError(f"shard index {message.index} without a shard count")
        return Shard()
    return Shard(message.index, message.count)


def txn_id_to_proto(txn: TransactionId) -> common_pb2.TransactionId:
    return common_pb2.TransactionId(job=txn.job, batch=txn.batch)


def txn_id_from_proto(message: common_pb2.TransactionId) -> TransactionId:
    """A :class:`TransactionId`; ValueError for an empty job or a negative batch."""
    return TransactionId(message.job, message.batch)


_STATE_TO_PROTO: Final[dict[TransactionState, common_pb2.TransactionState]] = {
    TransactionState.PREPARING: common_pb2.TRANSACTION_STATE_PREPARING,
    TransactionState.COMMITTING: common_pb2.TRANSACTION_STATE_COMMITTING,
    TransactionState.COMMITTED: common_pb2.TRANSACTION_STATE_COMMITTED,
    TransactionState.ABORTING: common_pb2.TRANSACTION_STATE_ABORTING,
    TransactionState.ABORTED: common_pb2.TRANSACTION_STATE_ABORTED,
}
_STATE_FROM_PROTO: Final[dict[int, TransactionState]] = {int(v): k for k, v in _STATE_TO_PROTO.items()}


def state_to_proto(state: TransactionState) -> common_pb2.TransactionState:
    return _STATE_TO_PROTO[state]


def state_from_proto(value: int) -> TransactionState | None:
    """The state of a ``TransactionState`` value; None for UNSPECIFIED (a transaction nobody knows:
    presumed abort). ValueError for a value that is not a state."""
    if value == common_pb2.TRANSACTION_STATE_UNSPECIFIED:
        return None
    try:
        return _STATE_FROM_PROTO[value]
    except KeyError:
        raise ValueError(f"{value} is not a transaction state") from None
