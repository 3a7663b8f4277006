"""Reading progress: the generator's committed positions, result tables, the flush event."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from onceflow.core import defaults
from onceflow.demo.flush import FLUSH_IP, flush_event, last_event_time
from onceflow.demo.observe import produced_from_offsets, sqlite_totals
from onceflow.logproducer.generator import TrafficModel, expected_counts
from onceflow.logproducer.generator.traffic import ip_and_time


def test_produced_counts_every_task_of_the_generator() -> None:
    one_task = [({"generator": "access-log", "task": 0.0, "tasks": 1.0}, {"seq": 999.0})]
    assert produced_from_offsets(one_task) == 1000
    # Task k of n emits k, k + n, ...: task 0 of 2 at seq 10 -> 0..10 (6 events), task 1 at 7 -> 1..7 (4).
    two_tasks: list[tuple[dict[str, object], dict[str, object]]] = [
        ({"generator": "access-log", "task": 0, "tasks": 2}, {"seq": 10}),
        ({"generator": "access-log", "task": 1, "tasks": 2}, {"seq": 7}),
        ({"other": "partition"}, {"seq": 5}),
    ]
    assert produced_from_offsets(two_tasks) == 10


def test_sqlite_totals(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    assert sqlite_totals(path, "results") == (0, 0)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE results (window_start INT, ip TEXT, count INT)")
        db.executemany("INSERT INTO results VALUES (?, ?, ?)", [(0, "a", 3), (0, "b", 4)])
    assert sqlite_totals(path, "results") == (2, 7)
    assert sqlite_totals(path, "missing_table") is None


def test_the_flush_event_closes_every_window_of_the_run_and_stays_in_its_own() -> None:
    model = TrafficModel(seed=3, start_ms=1_000_000, event_rate=1000, max_disorder_ms=3000)
    count = 20_000
    rows = expected_counts(model, count)
    last = last_event_time(model, count)
    assert last == max(event_time for _, event_time in ip_and_time(model, 0, count))
    event = flush_event(model, count)
    assert event["ip"] == FLUSH_IP
    watermark = event["event_time"] - defaults.ALLOWED_LATENESS_MS
    # Every real window ends before the flush event's watermark ...
    assert all(row.window_end <= watermark for row in rows)
    # ... and the flush event's own window does not.
    own_window_end = event["event_time"] - event["event_time"] % defaults.WINDOW_MS + defaults.WINDOW_MS
    assert own_window_end > watermark
    assert flush_event(model, count) == event
    assert last_event_time(model, 0) is None
