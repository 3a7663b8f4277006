"""The dashboard for a non-terminal stdout (tests, CI): one progress line per interval."""

from __future__ import annotations

from onceflow.demo.dashboard.render import clock
from onceflow.demo.dashboard.snapshot import Snapshot


def progress_line(snap: Snapshot) -> str:
    """E.g. ``[  42s] producing produced=42000/90000 (1003/s) counted=37000 batches=8 ...``."""
    spark = snap.spark
    batches = spark.last_batch + 1 if spark is not None else 0
    watermark = clock(spark.watermark_ms) if spark is not None and spark.watermark_ms > 0 else "-"
    duration = f"{spark.batch_duration_s:.1f}s" if spark is not None else "-"
    down = [row.name for row in snap.services if row.state != "running"]
    target = f"/{snap.target_events}" if snap.target_events else ""
    return (
        f"[{snap.elapsed_s:5.0f}s] {snap.phase} lines={snap.lines_read} events={snap.produced}{target} "
        f"({snap.produced_per_s:.0f}/s) dead_letters={snap.dead_letters} input_ended={str(snap.input_ended).lower()} "
        f"counted={snap.counted_in_store} sqlite={snap.counted_in_sqlite} rows={snap.result_rows} "
        f"batches={batches} batch_duration={duration} watermark={watermark} "
        f"txns committed={snap.transactions_committed} aborted={snap.transactions_aborted} "
        f"in_doubt={snap.transactions_in_doubt} kills={snap.kills} recoveries={snap.recoveries}"
        + (f" down={','.join(down)}" if down else "")
    )
