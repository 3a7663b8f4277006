"""What the dashboard shows, collected once per refresh: a :class:`Snapshot` of the whole run.

Collection is separate from rendering: :class:`MetricsCollector` asks the services (through an
:class:`~onceflow.demo.observe.Observer`) and the supervisor, keeps the last known value of anything
that cannot be asked right now (a service that was just killed), and derives rates.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

from onceflow.demo.observe import InputProgress, SparkProgress, TopIps, TransactionTally
from onceflow.demo.supervisor import EventKind, Supervisor, SupervisorEvent

#: Events shown in the dashboard's log of kills and recoveries.
LOGGED_KINDS = (EventKind.KILLED, EventKind.EXITED, EventKind.RECOVERED, EventKind.GAVE_UP)


class Source(Protocol):
    """What the collector needs from an Observer (a fake in unit tests)."""

    def input_progress(self) -> InputProgress | None: ...
    def transactions(self) -> TransactionTally | None: ...
    def spark(self) -> SparkProgress | None: ...
    def top_ips(self, limit: int = 5) -> TopIps | None: ...
    def consumer_totals(self) -> tuple[int, int] | None: ...
    def sqlite_sink_totals(self) -> tuple[int, int] | None: ...


@dataclass(frozen=True)
class ServiceRow:
    name: str
    state: str
    pid: int | None
    restarts: int


@dataclass(frozen=True)
class Snapshot:
    """The run at one moment. Counts are of committed data only."""

    at: float
    elapsed_s: float
    phase: str
    #: Events the run will produce (the generator's N); 0 when unknown (a file).
    target_events: int
    produced: int
    produced_per_s: float
    lines_read: int
    dead_letters: int
    input_ended: bool
    counted_in_store: int
    result_rows: int
    counted_in_sqlite: int
    transactions_committed: int
    transactions_aborted: int
    transactions_in_doubt: int
    spark: SparkProgress | None
    top: TopIps | None
    services: tuple[ServiceRow, ...]
    log: tuple[SupervisorEvent, ...]
    kills: int
    recoveries: int

    @property
    def produced_fraction(self) -> float:
        return min(1.0, self.produced / self.target_events) if self.target_events else 0.0

    @property
    def processed_fraction(self) -> float:
        return min(1.0, self.counted_in_store / self.produced) if self.produced else 0.0


@dataclass
class RateMeter:
    """Rate of a monotone counter over the last ``window_s`` seconds."""

    window_s: float = 5.0
    _samples: deque[tuple[float, int]] = field(default_factory=deque)

    def add(self, at: float, value: int) -> float:
        self._samples.append((at, value))
        while len(self._samples) > 2 and at - self._samples[0][0] > self.window_s:
            self._samples.popleft()
        first_at, first = self._samples[0]
        return (value - first) / (at - first_at) if at > first_at else 0.0


class MetricsCollector:
    """Builds a :class:`Snapshot` per call from the services and the supervisor."""

    def __init__(self, source: Source, supervisor: Supervisor, target_events: int) -> None:
        self.source = source
        self.supervisor = supervisor
        self.target_events = target_events
        self.started = time.time()
        self.input = InputProgress()
        self.store = (0, 0)
        self.sqlite = (0, 0)
        self.tally = TransactionTally()
        self.spark: SparkProgress | None = None
        self.top: TopIps | None = None
        self._rate = RateMeter()

    def refresh(self) -> None:
        """Ask every service; keep the last known value where one does not answer."""
        progress = self.source.input_progress()
        if progress is not None and progress.lines >= self.input.lines:
            self.input = progress
        store = self.source.consumer_totals()
        if store is not None:
            self.store = store
        sqlite = self.source.sqlite_sink_totals()
        if sqlite is not None:
            self.sqlite = sqlite
        tally = self.source.transactions()
        if tally is not None:
            self.tally = tally
        spark = self.source.spark()
        if spark is not None:
            self.spark = spark
        top = self.source.top_ips()
        if top is not None and top.counts:
            self.top = top

    def snapshot(self, phase: str) -> Snapshot:
        """The latest values (call :meth:`refresh` first to update them)."""
        now = time.time()
        states = self.supervisor.states()
        services = tuple(
            ServiceRow(name, states[name].value, self.supervisor.service(name).child.pid,
                       self.supervisor.service(name).restarts)
            for name in self.supervisor.names()
        )  # fmt: skip
        journal = self.supervisor.journal
        log = tuple(e for e in journal.recent(200) if e.kind in LOGGED_KINDS)[-12:]
        return Snapshot(
            at=now,
            elapsed_s=now - self.started,
            phase=phase,
            target_events=self.target_events,
            produced=self.input.events,
            produced_per_s=self._rate.add(now, self.input.events),
            lines_read=self.input.lines,
            dead_letters=self.input.dead_letters,
            input_ended=self.input.ended,
            counted_in_store=self.store[1],
            result_rows=self.store[0],
            counted_in_sqlite=self.sqlite[1],
            transactions_committed=self.tally.committed,
            transactions_aborted=self.tally.aborted,
            transactions_in_doubt=self.tally.in_doubt,
            spark=self.spark,
            top=self.top,
            services=services,
            log=log,
            kills=journal.counts[EventKind.KILLED],
            recoveries=journal.counts[EventKind.RECOVERED],
        )
