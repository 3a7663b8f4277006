"""Chaos: victims spread over every service; kills go through the supervisor (which restarts them)."""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from pathlib import Path

from onceflow.demo.chaos import ChaosMonkey, choose_victim
from onceflow.demo.supervisor import ChildProcess, EventKind, RestartPolicy, SupervisedService, Supervisor


def test_victims_spread_evenly_over_the_candidates() -> None:
    kills: Counter[str] = Counter()
    rng = random.Random(1)
    names = ["broker", "coordinator", "participant", "connect", "spark", "consumer"]
    for _ in range(24):
        victim = choose_victim(names, kills, rng)
        assert victim is not None
        kills[victim] += 1
    assert set(kills.values()) == {4}
    assert choose_victim([], kills, rng) is None


def test_the_monkey_kills_running_services_and_the_supervisor_restarts_them(tmp_path: Path) -> None:
    supervisor = Supervisor(tick_s=0.05)
    for name in ("a", "b"):
        child = ChildProcess(name, [sys.executable, "-c", "import time; time.sleep(600)"], tmp_path / f"{name}.log")
        supervisor.add(SupervisedService(child, lambda c: c.running(), RestartPolicy(delay_s=0.1)))
    supervisor.watch()
    try:
        for name in ("a", "b"):
            supervisor.start(name)
            supervisor.wait_ready(name, 20)
        monkey = ChaosMonkey(supervisor, ["a", "b"], interval_s=0.3, seed=3, first_kill_after_s=0.0).start()
        deadline = time.monotonic() + 20
        while sum(monkey.kills.values()) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        monkey.stop()
        assert monkey.kills["a"] >= 1 and monkey.kills["b"] >= 1
        for name in ("a", "b"):
            supervisor.wait_ready(name, 20)
        assert supervisor.journal.counts[EventKind.KILLED] == sum(monkey.kills.values())
        assert supervisor.journal.counts[EventKind.RECOVERED] >= 3
    finally:
        supervisor.stop(timeout=5)
