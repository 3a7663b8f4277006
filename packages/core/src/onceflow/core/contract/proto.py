"""The contract's values to and from their ``onceflow.v1`` messages: one conversion for every service."""

from __future__ import annotations

from collections.abc import Iterable

from onceflow.core.contract.bindings import DEFAULT_OUTPUT, SinkBinding, SinkMode, ValueFormat
from onceflow.core.contract.schema import schema_from_bytes, schema_to_bytes
from onceflow.core.staging.files import StagedFile
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
