"""Dashboard logic: collecting snapshots (last known values, rates) and rendering them."""

from __future__ import annotations

import io
import sys
from pathlib import Path

from rich.console import Console

from onceflow.contract import TransactionState
from onceflow.core.end_of_input import END_OF_INPUT_TIME_MS
from onceflow.demo.dashboard import MetricsCollector, RateMeter, Snapshot, progress_line, render
from onceflow.demo.observe import InputProgress, SparkProgress, TopIps, TransactionTally
from onceflow.demo.runner import DRAIN_QUIET_S, is_complete, is_drained
from onceflow.demo.supervisor import ChildProcess, EventKind, SupervisedService, Supervisor


class FakeSource:
    """Answers like an Observer; ``down`` makes every read fail (a service was just killed)."""

    def __init__(self) -> None:
        self.down = False
        self.produced_value = 0
        self.ended = False
        self.tally = TransactionTally()

    def input_progress(self) -> InputProgress | None:
        if self.down:
            return None
        return InputProgress(self.produced_value + 3, self.produced_value, 3, self.ended)

    def transactions(self) -> TransactionTally | None:
        return None if self.down else self.tally

    def spark(self) -> SparkProgress | None:
        return None if self.down else SparkProgress(9, 2.5, 1_795_000_000_000, 2000.0)

    def top_ips(self, limit: int = 5) -> TopIps | None:
        return None if self.down else TopIps(1_795_000_000_000, (("10.0.0.1", 42), ("10.0.0.2", 7)))

    def consumer_totals(self) -> tuple[int, int] | None:
        return None if self.down else (10, self.produced_value)

    def sqlite_sink_totals(self) -> tuple[int, int] | None:
        return None if self.down else (10, self.produced_value)


def supervisor_with(tmp_path: Path) -> Supervisor:
    supervisor = Supervisor()
    child = ChildProcess("broker", [sys.executable, "-c", "pass"], tmp_path / "broker.log")
    supervisor.add(SupervisedService(child, lambda c: True))
    return supervisor


def test_rate_meter_measures_over_its_window() -> None:
    meter = RateMeter(window_s=5)
    assert meter.add(100.0, 0) == 0.0
    assert meter.add(101.0, 1000) == 1000.0
    assert meter.add(102.0, 3000) == 1500.0
    # Samples older than the window are dropped.
    assert meter.add(110.0, 3000) == 0.0


def test_collector_keeps_the_last_known_values_while_services_are_down(tmp_path: Path) -> None:
    source = FakeSource()
    source.produced_value = 500
    committed, aborted = TransactionState.COMMITTED, TransactionState.ABORTED
    for batch, state in ((0, committed), (1, aborted), (1, committed), (2, aborted)):
        source.tally.add(batch, state)
    collector = MetricsCollector(source, supervisor_with(tmp_path), target_events=1000)
    collector.refresh()
    source.down = True
    collector.refresh()
    snap = collector.snapshot("producing")
    assert snap.produced == 500
    assert snap.counted_in_store == 500
    assert (snap.transactions_committed, snap.transactions_aborted) == (2, 2)
    assert snap.spark is not None and snap.spark.last_batch == 9
    assert snap.top is not None and snap.top.counts[0] == ("10.0.0.1", 42)
    assert snap.produced_fraction == 0.5
    assert [row.name for row in snap.services] == ["broker"]


def test_the_log_shows_kills_and_recoveries(tmp_path: Path) -> None:
    supervisor = supervisor_with(tmp_path)
    supervisor.journal.record("broker", EventKind.STARTED, pid=1)
    supervisor.journal.record("broker", EventKind.KILLED, pid=1, detail="kill -9 (chaos)")
    supervisor.journal.record("broker", EventKind.EXITED, pid=1, exit_code=-9)
    supervisor.journal.record("broker", EventKind.RECOVERED, pid=2, detail="down 1.2s")
    collector = MetricsCollector(FakeSource(), supervisor, 10)
    collector.refresh()
    snap = collector.snapshot("producing")
    assert [e.kind for e in snap.log] == [EventKind.KILLED, EventKind.EXITED, EventKind.RECOVERED]
    assert (snap.kills, snap.recoveries) == (1, 1)

    console = Console(record=True, width=140, file=io.StringIO())
    console.print(render(snap, "run-1"))
    text = console.export_text()
    assert "onceflow demo  run run-1  producing" in text
    assert "broker killed pid=1 kill -9 (chaos)" in text
    assert "broker recovered pid=2 down 1.2s" in text
    assert "10.0.0.1" in text


def test_plain_progress_line(tmp_path: Path) -> None:
    source = FakeSource()
    source.produced_value = 1000
    collector = MetricsCollector(source, supervisor_with(tmp_path), 1000)
    collector.refresh()
    line = progress_line(collector.snapshot("draining"))
    assert "draining lines=1003 events=1000/1000" in line
    assert "dead_letters=3 input_ended=false" in line
    assert "counted=1000" in line
    assert "batches=10 batch_duration=2.5s" in line
    # The supervisor never started the service: it is reported as down.
    assert "down=broker" in line


def snapshot(**changes: object) -> Snapshot:
    base: dict[str, object] = dict(
        at=0.0, elapsed_s=0.0, phase="draining", target_events=100, produced=100, produced_per_s=0.0,
        lines_read=101, dead_letters=1, input_ended=True,
        counted_in_store=100, result_rows=5, counted_in_sqlite=100, transactions_committed=3,
        transactions_aborted=0, transactions_in_doubt=0, spark=None, top=None, services=(), log=(),
        kills=0, recoveries=0,
    )  # fmt: skip
    base.update(changes)
    return Snapshot(**base)  # type: ignore[arg-type]


def test_a_run_is_complete_only_when_everything_is_through() -> None:
    assert is_complete(snapshot())
    assert not is_complete(snapshot(input_ended=False))
    assert not is_complete(snapshot(counted_in_store=99))
    assert not is_complete(snapshot(counted_in_sqlite=99))
    assert not is_complete(snapshot(transactions_in_doubt=1))
    assert not is_complete(snapshot(produced=99))
    # a file: no target, the input's own events
    assert is_complete(snapshot(target_events=0, produced=100))


def test_a_run_whose_job_dropped_late_events_is_drained_once_quiet_after_the_end_of_input() -> None:
    at_end = SparkProgress(9, 1.0, END_OF_INPUT_TIME_MS - 5_000, 0.0)
    late = snapshot(counted_in_store=97, counted_in_sqlite=97, spark=at_end)
    assert not is_complete(late)
    assert is_drained(late, DRAIN_QUIET_S)
    assert not is_drained(late, DRAIN_QUIET_S - 1)
    assert not is_drained(snapshot(spark=SparkProgress(9, 1.0, 1_795_000_000_000, 0.0)), DRAIN_QUIET_S)
    assert not is_drained(snapshot(input_ended=False, spark=at_end), DRAIN_QUIET_S)
