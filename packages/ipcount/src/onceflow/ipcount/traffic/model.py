"""Deterministic synthetic access traffic: event ``i`` is a pure function of ``(seed, i, model)``.

Events are drawn in blocks of :data:`BLOCK` from a ``random.Random`` seeded with ``(seed, block)``,
so any event can be recomputed without the ones before its block (the truth command and a restarted
task both rely on that), and a whole block costs a few C-level ``choices`` calls.

- ips, paths and statuses follow Zipf laws over their pools (rank ``r`` has weight ``1 / r**s``);
  which ip is the most frequent depends on the seed;
- event time = ``start + i * 1000 / event_rate`` minus a disorder in ``[0, max_disorder_ms]``, so
  events are out of order by at most ``max_disorder_ms`` (below the job's 5 s lateness by default).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from onceflow.core.avro import AccessEvent

BLOCK = 4096
METHODS = ("GET", "POST", "PUT", "DELETE", "HEAD")
METHOD_WEIGHTS = (90, 6, 2, 1, 1)
STATUSES = (200, 304, 404, 301, 500, 403, 502)
USER_AGENTS = (
    "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/128.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 Safari/605.1.15",
    "curl/8.5.0",
    "Googlebot/2.1 (+http://www.google.com/bot.html)",
)


@dataclass(frozen=True)
class TrafficModel:
    """Everything an event depends on besides ``(seed, i)``."""

    seed: int = 0
    ips: int = 1000
    paths: int = 200
    zipf_exponent: float = 1.1
    start_ms: int = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    event_rate: int = 1000  # events per second of event time
    max_disorder_ms: int = 3000

    def __post_init__(self) -> None:
        for name in ("ips", "paths", "event_rate"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.max_disorder_ms < 0:
            raise ValueError("max_disorder_ms must be >= 0")


class EventBlock(NamedTuple):
    """Columns of one block: indexes into the model's pools, and the event times."""

    ip: list[int]
    path: list[int]
    status: list[int]
    method: list[int]
    agent: list[int]
    size: list[int]
    event_time: list[int]


def _zipf_cumulative(n: int, exponent: float) -> list[float]:
    return list(itertools.accumulate(1.0 / (rank**exponent) for rank in range(1, n + 1)))


@lru_cache(maxsize=16)
def _pools(model: TrafficModel) -> tuple[list[str], list[str], list[float], list[float], list[float]]:
    """ip and path names in rank order (seeded permutation), and the cumulative Zipf weights."""
    rng = random.Random(f"onceflow-pools:{model.seed}")
    ip_ids = rng.sample(range(1, 254 * 254 * 254), model.ips)
    ips = [f"10.{n // 64516 % 254 + 1}.{n // 254 % 254}.{n % 254 + 1}" for n in ip_ids]
    paths = ["/"] + [
        f"/{kind}/{rng.randrange(10_000)}" for kind in ("item", "api/v1/item", "static/img") for _ in range(model.paths)
    ]
    paths = paths[: model.paths]
    return (
        ips,
        paths,
        _zipf_cumulative(model.ips, model.zipf_exponent),
        _zipf_cumulative(model.paths, model.zipf_exponent),
        _zipf_cumulative(len(STATUSES), 2.5),
    )


def pools(model: TrafficModel) -> tuple[list[str], list[str]]:
    """The ip and path pools of ``model``."""
    ips, paths, *_ = _pools(model)
    return ips, paths


@lru_cache(maxsize=8)
def block(model: TrafficModel, number: int) -> EventBlock:
    """The events ``number * BLOCK`` to ``(number + 1) * BLOCK - 1``."""
    _, _, ip_weights, path_weights, status_weights = _pools(model)
    rng = random.Random(model.seed * 1_000_003 + number)
    first = number * BLOCK
    disorder = model.max_disorder_ms + 1
    return EventBlock(
        ip=rng.choices(range(model.ips), cum_weights=ip_weights, k=BLOCK),
        path=rng.choices(range(model.paths), cum_weights=path_weights, k=BLOCK),
        status=rng.choices(range(len(STATUSES)), cum_weights=status_weights, k=BLOCK),
        method=rng.choices(range(len(METHODS)), weights=METHOD_WEIGHTS, k=BLOCK),
        agent=rng.choices(range(len(USER_AGENTS)), k=BLOCK),
        size=[rng.randrange(100, 50_000) for _ in range(BLOCK)],
        event_time=[
            model.start_ms + (i * 1000) // model.event_rate - int(rng.random() * disorder)
            for i in range(first, first + BLOCK)
        ],
    )


def event(model: TrafficModel, i: int) -> AccessEvent:
    """Event number ``i`` (0-based)."""
    if i < 0:
        raise ValueError("event numbers start at 0")
    ips, paths, *_ = _pools(model)
    b = block(model, i // BLOCK)
    j = i % BLOCK
    return AccessEvent(
        event_time=b.event_time[j],
        ip=ips[b.ip[j]],
        method=METHODS[b.method[j]],
        path=paths[b.path[j]],
        status=STATUSES[b.status[j]],
        bytes=b.size[j],
        user_agent=USER_AGENTS[b.agent[j]],
    )


def ip_and_time(model: TrafficModel, start: int, stop: int) -> Iterator[tuple[str, int]]:
    """``(ip, event_time)`` of events ``start`` to ``stop - 1``, fast (for the truth)."""
    ips, *_ = _pools(model)
    if stop <= start:
        return
    for number in range(start // BLOCK, (stop - 1) // BLOCK + 1):
        b = block(model, number)
        lo = max(start - number * BLOCK, 0)
        hi = min(stop - number * BLOCK, BLOCK)
        for j in range(lo, hi):
            yield ips[b.ip[j]], b.event_time[j]
