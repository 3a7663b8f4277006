"""Chaos: ``kill -9`` a random service every few seconds; the supervisor restarts it.

Victims are drawn among the services that have been up long enough, preferring those killed least
so far, so kills spread over every service (the broker included) instead of clustering. "Long
enough" is ``min_uptime_s`` plus ``recovery_factor`` times the service's last downtime: a service
that is slow to come back (a Spark driver needs tens of seconds to start its JVM and run its first
micro-batch) gets to work for a while before it can be killed again; otherwise the job could be
killed again and again before it ever commits. The draw is seeded, so the victims can be replayed.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Sequence

from onceflow.core.logging import get_logger
from onceflow.demo.supervisor import ServiceState, Supervisor

_log = get_logger(__name__)


def choose_victim(candidates: Sequence[str], kills: Counter[str], rng: random.Random) -> str | None:
    """A random service among ``candidates`` with the fewest kills so far (None when there is none)."""
    if not candidates:
        return None
    fewest = min(kills[name] for name in candidates)
    return rng.choice(sorted(name for name in candidates if kills[name] == fewest))


class ChaosMonkey:
    """A thread that kills one running service of ``victims`` every ``interval_s`` seconds."""

    def __init__(
        self,
        supervisor: Supervisor,
        victims: Sequence[str],
        interval_s: float = 8.0,
        *,
        seed: int | None = None,
        first_kill_after_s: float | None = None,
        min_uptime_s: float | None = None,
        recovery_factor: float = 1.5,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be > 0")
        self.supervisor = supervisor
        self.victims = list(victims)
        self.interval_s = interval_s
        self.first_kill_after_s = interval_s if first_kill_after_s is None else first_kill_after_s
        self.min_uptime_s = interval_s if min_uptime_s is None else min_uptime_s
        self.recovery_factor = recovery_factor
        self.kills: Counter[str] = Counter()
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> ChaosMonkey:
        self._thread = threading.Thread(target=self._loop, name="onceflow-demo-chaos", daemon=True)
        self._thread.start()
        _log.info("chaos.started", interval_s=self.interval_s, victims=",".join(self.victims))
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        _log.info("chaos.stopped", kills=sum(self.kills.values()), by_service=dict(self.kills))

    def needed_uptime(self, name: str) -> float:
        """How long ``name`` must have been up before it may be killed again."""
        return self.min_uptime_s + self.recovery_factor * self.supervisor.service(name).last_downtime_s

    def kill_one(self) -> str | None:
        """Kill one running victim now; returns its name (None when none is running)."""
        states = self.supervisor.states()
        running = [
            name
            for name in self.victims
            if states.get(name) is ServiceState.RUNNING
            and (self.supervisor.uptime(name) or 0.0) >= self.needed_uptime(name)
        ]
        victim = choose_victim(running, self.kills, self._rng)
        if victim is None:
            return None
        if self.supervisor.kill(victim) is not None:
            self.kills[victim] += 1
            _log.warning("chaos.kill", service=victim, kill=sum(self.kills.values()))
            return victim
        return None

    def _loop(self) -> None:
        if self._stop.wait(self.first_kill_after_s):
            return
        while True:
            try:
                self.kill_one()
            except Exception as exc:  # chaos must never take the demo down
                _log.error("chaos.failed", error=f"{type(exc).__name__}: {exc}")
            if self._stop.wait(self.interval_s):
                return
