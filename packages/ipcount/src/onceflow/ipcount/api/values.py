"""What the IP-count example's API (``onceflow.v1.IpCounts``, ipcount.proto) answers, as its servicer and
its client name it: the views' counts, a watch's update, the audit's request and summary."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


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
