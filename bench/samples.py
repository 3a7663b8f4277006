"""Percentiles of a benchmark's samples, one definition for every script under ``bench/``."""

from __future__ import annotations

from collections.abc import Sequence


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q`` percentile (``q`` in [0, 1]): the sorted samples' element at index ``floor(q * n)``,
    the largest for ``q = 1``."""
    if not samples:
        raise ValueError("percentile of no samples")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
