"""What the consumer's Results API answers, as every process names it: the rows of a stored table, a
table's description and a watch's update (the consumer serves them; the contract's
:class:`~onceflow.contract.clients.ResultsClient` reads them)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class TableColumn:
    """One column of a stored table: its name, Arrow type (``int64``, ``timestamp[us, tz=UTC]``, ...) and
    whether it takes nulls."""

    name: str
    type: str
    nullable: bool = True


@dataclass(frozen=True, slots=True)
class TableDescription:
    """A stored table as ListTables answers it: the topic it stores, how (``upsert`` on ``keys`` or
    ``append``), the topic's value format, and its columns (``created`` False: not created yet)."""

    table: str
    topic: str
    mode: str
    keys: tuple[str, ...] = ()
    value_format: str = ""
    created: bool = False
    columns: tuple[TableColumn, ...] = ()


def _parsed(rows: tuple[str, ...]) -> list[dict[str, Any]]:
    return [json.loads(row) for row in rows]


@dataclass(frozen=True, slots=True)
class RowsPage:
    """One page of a table's committed rows, each one JSON object as the API sends it (timestamps and dates
    ISO-8601, decimals as strings, binary as base64); ``next_page_token`` continues it ("" at the end)."""

    rows: tuple[str, ...]
    next_page_token: str = ""

    def records(self) -> list[dict[str, Any]]:
        """The rows parsed, column name to value."""
        return _parsed(self.rows)


@dataclass(frozen=True, slots=True)
class RowsUpdate:
    """One committed batch of a watched table: its rows (JSON objects, as :class:`RowsPage`) and the
    consumer's position after it, per partition of the table's topic. The first update has no rows."""

    rows: tuple[str, ...]
    offsets: Mapping[int, int] = field(default_factory=dict)

    def records(self) -> list[dict[str, Any]]:
        """The rows parsed, column name to value."""
        return _parsed(self.rows)
