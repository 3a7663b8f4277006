"""Domain values to and from the Results API's contract values (:mod:`onceflow.contract.results`;
their messages are :mod:`onceflow.contract.proto`'s)."""

from __future__ import annotations

from collections.abc import Iterable

from onceflow.consumer.api.tables import TableInfo
from onceflow.consumer.store import Row
from onceflow.contract.results import TableColumn, TableDescription
from onceflow.core.avro.arrow import json_value


def json_rows(rows: Iterable[Row]) -> tuple[str, ...]:
    """Rows as JSON objects (timestamps and dates ISO-8601, decimals as strings, binary as base64)."""
    return tuple(json_value(row).decode() for row in rows)


def table_description(info: TableInfo) -> TableDescription:
    table = info.table
    columns = tuple(TableColumn(field.name, str(field.type), field.nullable) for field in (info.columns or ()))
    return TableDescription(
        table=table.table, topic=table.topic, mode=table.mode.value, keys=table.keys,
        value_format=table.value_format.value, created=info.columns is not None, columns=columns,
    )  # fmt: skip
