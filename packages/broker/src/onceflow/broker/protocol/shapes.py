"""Version-agnostic construction of kio protocol entities.

kio generates one frozen dataclass per API version. Handlers describe a response once, as nested
mappings keyed by Kafka field names, and :func:`build_entity` shapes that description into whichever
version the client negotiated.

Guarantees:
- keys the target version does not have are dropped (older versions simply lack newer fields);
- fields the description leaves out get their schema default, or the Kafka zero value of their type
  (0, "", empty array, null for nullable fields, ``NONE`` for error codes);
- nested mappings and sequences of mappings become the nested entity classes of the same version.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode

E = TypeVar("E")

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@dataclasses.dataclass(frozen=True, slots=True)
class _FieldShape:
    name: str
    kafka_type: str | None
    optional: bool
    entity: type[Any] | None
    is_array: bool
    has_default: bool


def _unwrap_optional(hint: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return (args[0] if len(args) == 1 else hint), len(args) != len(typing.get_args(hint))
    return hint, False


_SHAPES: dict[type[Any], tuple[_FieldShape, ...]] = {}


def _shape_of(cls: type[Any]) -> tuple[_FieldShape, ...]:
    cached = _SHAPES.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    shapes: list[_FieldShape] = []
    for f in dataclasses.fields(cls):
        hint, optional = _unwrap_optional(hints[f.name])
        is_array = typing.get_origin(hint) is tuple
        inner = typing.get_args(hint)[0] if is_array else hint
        entity = inner if dataclasses.is_dataclass(inner) and isinstance(inner, type) else None
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        shapes.append(_FieldShape(f.name, f.metadata.get("kafka_type"), optional, entity, is_array, has_default))
    return tuple(shapes)


def _zero_value(shape: _FieldShape) -> object:
    if shape.is_array:
        return ()
    if shape.optional:
        return None
    if shape.entity is not None:
        return build_entity(shape.entity, {})
    match shape.kafka_type:
        case "string":
            return ""
        case "bytes" | "records":
            return b""
        case "bool":
            return False
        case "uuid":
            return uuid.UUID(int=0)
        case "error_code":
            return ErrorCode.none
        case "float64":
            return 0.0
        case "timedelta_i32" | "timedelta_i64":
            return datetime.timedelta(0)
        case "datetime_i64":
            return _EPOCH
        case _:
            return 0


def _convert(shape: _FieldShape, value: object) -> object:
    if value is None:
        return None
    if shape.entity is not None:
        if shape.is_array and isinstance(value, Sequence):
            return tuple(build_entity(shape.entity, v) if isinstance(v, Mapping) else v for v in value)
        if isinstance(value, Mapping):
            return build_entity(shape.entity, value)
        return value
    if shape.is_array and isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return tuple(value)
    if shape.kafka_type == "error_code" and isinstance(value, int):
        return ErrorCode(value)
    if shape.kafka_type in ("timedelta_i32", "timedelta_i64") and isinstance(value, int):
        return datetime.timedelta(milliseconds=value)
    return value


def build_entity(cls: type[E], values: Mapping[str, object]) -> E:
    """Build an instance of the kio entity ``cls`` from a field-name mapping (see module docs)."""
    kwargs: dict[str, object] = {}
    for shape in _shape_of(cls):
        if shape.name in values:
            kwargs[shape.name] = _convert(shape, values[shape.name])
        elif not shape.has_default:
            kwargs[shape.name] = _zero_value(shape)
    return cls(**kwargs)


def field_names(cls: type[Any]) -> frozenset[str]:
    """The Kafka field names present in this version of an entity."""
    return frozenset(s.name for s in _shape_of(cls))
