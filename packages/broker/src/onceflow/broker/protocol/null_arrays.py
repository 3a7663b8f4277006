"""Null arrays where the schema does not allow them, read as empty arrays.

kio decodes a null array (length -1, or 0 in a compact array) as None whatever the schema says, so a
hostile or buggy client could hand a handler ``None`` where every Kafka schema promises a sequence.
:func:`fill_null_arrays` replaces each such None with ``()``, recursively, so the handler answers
for "no topics" (an empty response) instead of raising. Arrays the schema declares nullable keep
their None, which carries meaning there (Metadata and OffsetFetch ``topics``: all topics;
DescribeConfigs ``configuration_keys``: every config).
"""

from __future__ import annotations

import dataclasses
from types import NoneType, UnionType
from typing import Any, NamedTuple, get_args, get_origin


class _ArrayField(NamedTuple):
    name: str
    nullable: bool
    entities: bool
    """True when the elements are entities (walked in turn)."""


class _Plan(NamedTuple):
    arrays: tuple[_ArrayField, ...]
    entities: tuple[str, ...]
    """Fields holding a single nested entity."""


_PLANS: dict[type[Any], _Plan] = {}


def _plan(entity_cls: type[Any]) -> _Plan:
    plan = _PLANS.get(entity_cls)
    if plan is None:
        plan = _PLANS[entity_cls] = _make_plan(entity_cls)
    return plan


def _make_plan(entity_cls: type[Any]) -> _Plan:
    arrays: list[_ArrayField] = []
    entities: list[str] = []
    for field in dataclasses.fields(entity_cls):
        field_type: Any = field.type
        nullable = False
        if get_origin(field_type) is UnionType:
            nullable = NoneType in get_args(field_type)
            field_type = next(t for t in get_args(field_type) if t is not NoneType)
        if get_origin(field_type) is tuple:
            inner = get_args(field_type)[0]
            arrays.append(_ArrayField(field.name, nullable, dataclasses.is_dataclass(inner)))
        elif dataclasses.is_dataclass(field_type):
            entities.append(field.name)
    return _Plan(tuple(arrays), tuple(entities))


def fill_null_arrays(entity: Any) -> Any:
    """``entity`` with every null non-nullable array replaced by ``()`` (at any depth); the same
    object when there is none."""
    plan = _plan(type(entity))
    changes: dict[str, Any] = {}
    for array in plan.arrays:
        value = getattr(entity, array.name)
        if value is None:
            if not array.nullable:
                changes[array.name] = ()
        elif array.entities:
            filled = tuple(fill_null_arrays(item) for item in value)
            if any(new is not old for new, old in zip(filled, value, strict=True)):
                changes[array.name] = filled
    for name in plan.entities:
        value = getattr(entity, name)
        if value is not None:
            filled = fill_null_arrays(value)
            if filled is not value:
                changes[name] = filled
    return dataclasses.replace(entity, **changes) if changes else entity
