"""The exact expected counts of the IP-count job for the first N generated events.

Every event counts once in the tumbling window ``[t - t % w, t - t % w + w)`` of its event time
(the generator's disorder stays below the job's lateness, so no event is dropped as late).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from onceflow.core import defaults
from onceflow.ipcount.traffic.model import TrafficModel, ip_and_time


@dataclass(frozen=True, order=True)
class WindowCount:
    window_start: int
    window_end: int
    ip: str
    count: int


def expected_counts(model: TrafficModel, count: int, window_ms: int = defaults.WINDOW_MS) -> list[WindowCount]:
    """Counts per (window, ip), sorted by window then ip."""
    if window_ms < 1:
        raise ValueError("window_ms must be >= 1")
    counts: Counter[tuple[int, str]] = Counter()
    for ip, event_time in ip_and_time(model, 0, count):
        counts[(event_time - event_time % window_ms, ip)] += 1
    return [WindowCount(start, start + window_ms, ip, n) for (start, ip), n in sorted(counts.items())]
