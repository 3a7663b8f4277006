"""Fixtures: a real TransactionCoordinator and GroupCoordinator on a tmp dir, a recording MarkerWriter,
a settable clock, and a producer-id counter."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from onceflow.broker.groups import GroupCoordinator
from onceflow.broker.transactions import MarkerWriteError, TransactionCoordinator, TransactionMarker


class MarkerStorageFailure(RuntimeError):  # noqa: N818 - a failure, not an error class of ours
    """What a broken partition write looks like to the coordinator (the process dies right after)."""


@dataclass
class RecordingMarkers:
    """A MarkerWriter that records every marker; it can fail after ``fail_after`` writes, and knows
    partitions that do not exist."""

    written: list[TransactionMarker] = field(default_factory=list)
    fail_after: int | None = None
    missing: set[tuple[str, int]] = field(default_factory=set)

    def write_marker(self, marker: TransactionMarker) -> None:
        topic, partition = marker.topic, marker.partition
        if (topic, partition) in self.missing:
            raise MarkerWriteError(topic, partition, "unknown topic or partition")
        if self.fail_after is not None and len(self.written) >= self.fail_after:
            raise MarkerStorageFailure(f"disk went away writing {topic}-{partition}")
        self.written.append(marker)

    def partitions(self, *, commit: bool | None = None) -> set[tuple[str, int]]:
        return {(m.topic, m.partition) for m in self.written if commit is None or m.commit == commit}


@dataclass
class Clock:
    """Wall clock in seconds, moved by hand."""

    now: float = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance_ms(self, ms: int) -> None:
        self.now += ms / 1000


@dataclass
class Broker:
    """The coordinators under test, as a broker would wire them."""

    txn: TransactionCoordinator
    groups: GroupCoordinator
    markers: RecordingMarkers
    clock: Clock


BrokerFactory = Callable[..., Any]


@pytest.fixture
def broker(tmp_path: Path) -> BrokerFactory:
    """``async with broker(**overrides) as b``: started group and transaction coordinators on ``tmp_path``.

    Every broker built by one test shares the data dir, the clock and the producer-id counter, so a
    second one is a restart. The MarkerWriter fails after ``fail_after`` markers (in all, across
    calls) and rejects the ``missing`` partitions.
    """
    clock = Clock()
    ids = itertools.count(1000)

    @asynccontextmanager
    async def build(
        fail_after: int | None = None, missing: Iterable[tuple[str, int]] = (), **overrides: Any
    ) -> AsyncIterator[Broker]:
        markers = RecordingMarkers(fail_after=fail_after, missing=set(missing))
        groups = GroupCoordinator(tmp_path / "data", fsync=False, group_initial_rebalance_delay_ms=0)
        settings: dict[str, Any] = {
            "markers": markers,
            "groups": groups,
            "allocate_producer_id": lambda: next(ids),
            "fsync": False,
            "clock": clock,
            "abort_timed_out_transactions_interval_ms": 3_600_000,
            **overrides,
        }
        txn = TransactionCoordinator(tmp_path / "data", **settings)
        await groups.start()
        await txn.start()
        try:
            yield Broker(txn, groups, markers, clock)
        finally:
            await txn.stop()
            await groups.stop()

    return build
