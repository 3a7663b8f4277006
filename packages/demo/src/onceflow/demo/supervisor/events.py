"""What the supervisor reports: starts, readiness, exits, kills, restarts; kept in a bounded journal."""

from __future__ import annotations

import enum
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass


class EventKind(enum.Enum):
    STARTED = "started"
    READY = "ready"
    EXITED = "exited"
    KILLED = "killed"
    RESTARTING = "restarting"
    RECOVERED = "recovered"
    GAVE_UP = "gave_up"
    STOPPED = "stopped"


@dataclass(frozen=True)
class SupervisorEvent:
    """One thing that happened to a service. ``seq`` orders events across services."""

    seq: int
    at: float
    service: str
    kind: EventKind
    pid: int | None = None
    exit_code: int | None = None
    detail: str = ""

    def describe(self) -> str:
        """One human line, e.g. ``broker exited code=-9 pid=123``."""
        parts = [self.service, self.kind.value]
        if self.exit_code is not None:
            parts.append(f"code={self.exit_code}")
        if self.pid is not None:
            parts.append(f"pid={self.pid}")
        if self.detail:
            parts.append(self.detail)
        return " ".join(parts)


Listener = Callable[[SupervisorEvent], None]


class EventJournal:
    """Thread-safe: records events (keeping the newest ``capacity``) and tells listeners about each."""

    def __init__(self, capacity: int = 500) -> None:
        self._events: deque[SupervisorEvent] = deque(maxlen=capacity)
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self.counts: dict[EventKind, int] = dict.fromkeys(EventKind, 0)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def record(
        self,
        service: str,
        kind: EventKind,
        *,
        pid: int | None = None,
        exit_code: int | None = None,
        detail: str = "",
    ) -> SupervisorEvent:
        with self._lock:
            event = SupervisorEvent(next(self._counter), time.time(), service, kind, pid, exit_code, detail)
            self._events.append(event)
            self.counts[kind] += 1
        for listener in self._listeners:
            listener(event)
        return event

    def recent(self, limit: int = 20) -> list[SupervisorEvent]:
        with self._lock:
            return list(self._events)[-limit:]

    def all(self) -> list[SupervisorEvent]:
        with self._lock:
            return list(self._events)
