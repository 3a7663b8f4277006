"""The live terminal dashboard: a :class:`Snapshot` rendered with rich (tables in panels)."""

from __future__ import annotations

import time

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from onceflow.demo.dashboard.snapshot import Snapshot
from onceflow.demo.supervisor import EventKind

_STATE_STYLE = {"running": "green", "starting": "yellow", "backoff": "red", "failed": "bold red", "stopped": "dim"}
_EVENT_STYLE = {
    EventKind.KILLED: "bold red",
    EventKind.EXITED: "red",
    EventKind.RECOVERED: "green",
    EventKind.GAVE_UP: "bold red",
}


def clock(epoch_ms: int) -> str:
    """``HH:MM:SS`` (UTC) of an epoch-milliseconds time."""
    return time.strftime("%H:%M:%S", time.gmtime(epoch_ms / 1000))


def duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"


def pipeline_table(snap: Snapshot) -> Table:
    table = Table(show_header=False, box=None, padding=(0, 1))
    table.add_column(style="bold")
    table.add_column()
    target = f" / {snap.target_events:,} ({snap.produced_fraction:.0%})" if snap.target_events else ""
    ended = "  input ended" if snap.input_ended else ""
    table.add_row("lines read", f"{snap.lines_read:,}{ended}")
    table.add_row("events", f"{snap.produced:,}{target}  {snap.produced_per_s:,.0f}/s")
    table.add_row("dead letters", f"{snap.dead_letters:,}")
    table.add_row(
        "events counted",
        f"{snap.counted_in_store:,} in the consumer store ({snap.processed_fraction:.0%} of the events), "
        f"{snap.result_rows:,} result rows; {snap.counted_in_sqlite:,} in the SQLite sink",
    )
    spark = snap.spark
    if spark is None:
        table.add_row("micro-batches", "waiting for the Spark job")
    else:
        watermark = clock(spark.watermark_ms) if spark.watermark_ms > 0 else "-"
        table.add_row(
            "micro-batches",
            f"{spark.last_batch + 1:,} committed; last took {spark.batch_duration_s:.1f} s, "
            f"{spark.input_rows_per_s:,.0f} rows/s; watermark {watermark}",
        )
    table.add_row(
        "2PC transactions",
        f"{snap.transactions_committed:,} committed, {snap.transactions_aborted:,} aborted, "
        f"{snap.transactions_in_doubt:,} in doubt",
    )
    table.add_row("chaos", f"{snap.kills} kills, {snap.recoveries} recoveries")
    return table


def services_table(snap: Snapshot) -> Table:
    table = Table(title="services", expand=True)
    for column in ("service", "state", "pid", "restarts"):
        table.add_column(column)
    for row in snap.services:
        style = _STATE_STYLE.get(row.state, "")
        table.add_row(row.name, Text(row.state, style=style), str(row.pid or "-"), str(row.restarts))
    return table


def top_table(snap: Snapshot) -> Table:
    top = snap.top
    if top is None:
        table = Table(title="top IPs (no closed window yet)", expand=True)
        table.add_column("ip")
        table.add_column("count", justify="right")
        return table
    start = top.window_start_ms
    table = Table(title=f"top IPs, window {clock(start)}-{clock(start + 5000)}", expand=True)
    table.add_column("ip")
    table.add_column("count", justify="right")
    for ip, count in top.counts:
        table.add_row(ip, f"{count:,}")
    return table


def log_panel(snap: Snapshot) -> Panel:
    lines = Text()
    for event in snap.log:
        stamp = time.strftime("%H:%M:%S", time.localtime(event.at))
        lines.append(f"{stamp} {event.describe()}\n", style=_EVENT_STYLE.get(event.kind, ""))
    return Panel(lines or Text("no kills or crashes yet", style="dim"), title="kills and recoveries")


def render(snap: Snapshot, run_id: str) -> RenderableType:
    """The whole dashboard."""
    header = f"onceflow demo  run {run_id}  {snap.phase}  elapsed {duration(snap.elapsed_s)}"
    side = Table.grid(expand=True)
    side.add_column(ratio=1)
    side.add_column(ratio=1)
    side.add_row(services_table(snap), top_table(snap))
    return Group(Panel(pipeline_table(snap), title=header), side, log_panel(snap))
