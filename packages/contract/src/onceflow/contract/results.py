"""What the consumer's Results API answers, as every process names it: the rows of a stored table, a
table's description, a watch's update, the IP-count views' counts and the audit's summary (the consumer
serves them; the contract's :class:`~onceflow.contract.clients.ResultsClient` reads them)."""

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


@dataclass(frozen=True, slots=True)
class IpCount:
    """The IP-count view's row: requests of ``ip`` in the window ``[window_start_ms, window_end_ms)``."""

    window_start_ms: int
    window_end_ms: int
    ip: str
    count: int


@dataclass(frozen=True, slots=True)
class TopIpCounts:
    """The busiest IPs of the window starting at ``window_start_ms``, busiest first (ties by ip)."""

    window_start_ms: int
    counts: tuple[IpCount, ...] = ()


@dataclass(frozen=True, slots=True)
class IpCountsUpdate:
    """One committed batch of the IP-count view (WatchResults): its counts and the consumer's position
    after it, per partition. The first update has no counts."""

    counts: tuple[IpCount, ...]
    offsets: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GeneratorTruth:
    """An audit's truth recomputed from the generator's ``seed`` and first ``count`` events."""

    seed: int
    count: int


@dataclass(frozen=True, slots=True)
class SourceTopicTruth:
    """An audit's truth recounted from a source topic, read_committed ("": the pipeline's source topic)."""

    topic: str = ""


@dataclass(frozen=True, slots=True)
class CountMismatch:
    """One key where a sink differs: ``expected`` 0 for an extra row, ``actual`` 0 for a missing one (the
    sum of the rows for a duplicated key)."""

    window_start_ms: int
    ip: str
    expected: int
    actual: int


@dataclass(frozen=True, slots=True)
class SinkAuditSummary:
    """One sink against the truth, as RunAudit answers it (duplicated keys count as ``mismatched``)."""

    sink: str
    windows_expected: int
    matched: int = 0
    missing: int = 0
    extra: int = 0
    mismatched: int = 0
    examples: tuple[CountMismatch, ...] = ()
    exact: bool = False


@dataclass(frozen=True, slots=True)
class AuditSummary:
    """RunAudit's answer: one summary per audited sink; exact when every sink is."""

    sinks: tuple[SinkAuditSummary, ...] = ()
    exact: bool = False
