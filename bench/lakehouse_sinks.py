"""Commit cost per micro-batch of the Delta Lake and Iceberg sinks next to PostgreSQL, and small-file growth.

What it measures, per sink and batch: ``prepare`` (read and verify the staged files, write the
batch durably: PostgreSQL's prepared transaction, the lakehouse sinks' data files and journal
entry) and ``commit`` (``COMMIT PREPARED``; one table commit), their p50/p99, and rows per second
through prepare + commit. Then how many data files each lakehouse table's current version lists
after 10, 50, ... batches, and what a compaction outside the job leaves (Delta ``optimize.compact``
then ``vacuum``; Iceberg: a rewrite of every row into one snapshot, which is what Spark's
``rewrite_data_files`` commits, then ``expire_snapshots``); after it, a replayed batch is still
acknowledged without writing.

Assumptions:

- the participants run in this process (no gRPC, no coordinator: ``bench/twopc_sinks.py`` measures
  those), on local disk (the lakehouse files fsynced), PostgreSQL a real server (``fsync = on``);
  the Iceberg catalog is SQLite.
- every sink gets the same staged batches, in turn batch by batch (so machine noise hits them
  alike): ``--rows`` rows in ``--files`` staged files of the IP-count schema. ``--mode upsert``:
  upserted on ``(window_start, ip)`` into ``ip_counts``, and like an update-mode job half of a
  batch's keys are new and half update the previous batch's rows (``--update-share``), so merges
  rewrite data; ``--mode append``: every row appended to ``events``.
- staging happens before the clock starts (it is the Spark tasks' cost).

Usage:
    .venv/bin/python bench/lakehouse_sinks.py [--runs 3] [--batches 100] [--rows 1000] [--files 4] [--mode append]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql
from samples import percentile

from onceflow.contract import SinkBinding, SinkMode, TransactionId
from onceflow.contract.staging import StagedFile, StagingWriter
from onceflow.core.avro import IpCount
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA, ip_count_table_binding
from onceflow.sinks.base import SinkParticipant
from onceflow.sinks.delta.format import DeltaFormat
from onceflow.sinks.delta.settings import DeltaOptions
from onceflow.sinks.iceberg.format import IcebergFormat
from onceflow.sinks.iceberg.settings import IcebergCatalogSettings, IcebergOptions
from onceflow.sinks.lakehouse.open import open_participant
from onceflow.sinks.lakehouse.participant import LakehouseParticipant
from onceflow.sinks.postgres import PostgresParticipant
from onceflow.testing.sinks.postgres import running_postgres

JOB = "bench"
SINKS = ("postgres", "delta", "iceberg")
TABLES = {"upsert": "ip_counts", "append": "events"}
W0 = 1_700_000_000_000


@dataclass
class Timings:
    prepare_ms: list[float] = field(default_factory=list)
    commit_ms: list[float] = field(default_factory=list)
    rows: int = 0
    files: dict[int, int] = field(default_factory=dict)

    def rows_per_s(self) -> float:
        return self.rows / ((sum(self.prepare_ms) + sum(self.commit_ms)) / 1000)


def batch_rows(batch: int, rows: int, update_share: float) -> list[IpCount]:
    """Half (``update_share``) of the keys of the previous batch with new counts, the rest new keys."""
    updated = int(rows * update_share) if batch else 0
    keys = [(batch - 1, i) for i in range(updated)] + [(batch, i) for i in range(rows - updated)]
    return [ip_count(b, i, batch * 10 + i) for b, i in keys]


def ip_count(window: int, i: int, count: int) -> IpCount:
    start = W0 + window * 5_000
    return IpCount(window_start=start, window_end=start + 5_000, ip=f"10.0.{i // 250}.{i % 250}", count=count)


def binding(sink: str, mode: str) -> SinkBinding:
    """``ip_counts`` upserted on (window_start, ip), or ``events``: every row appended."""
    if mode == "upsert":
        return ip_count_table_binding(sink)
    return SinkBinding(sink=sink, table=TABLES["append"], mode=SinkMode.APPEND, schema=IP_COUNT_ARROW_SCHEMA)


def live_files(sink: LakehouseParticipant, table: str) -> int:
    if isinstance(sink.format, DeltaFormat):
        delta = sink.format.open(table)
        return len(delta.file_uris()) if delta is not None else 0
    assert isinstance(sink.format, IcebergFormat)
    found = sink.format.open(table)
    return len(list(found.scan().plan_files())) if found is not None else 0


def compact(sink: LakehouseParticipant, table: str) -> float:
    """The maintenance job's compaction; returns its seconds."""
    started = time.perf_counter()
    if isinstance(sink.format, DeltaFormat):
        delta = sink.format.open(table)
        assert delta is not None
        delta.optimize.compact()
        delta.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    else:
        assert isinstance(sink.format, IcebergFormat)
        found = sink.format.open(table)
        assert found is not None
        found.overwrite(found.scan().to_arrow())
        found.maintenance.expire_snapshots().older_than(datetime.datetime.now(datetime.UTC)).commit()
    return time.perf_counter() - started


def run_once(args: argparse.Namespace, work: Path, dsn: str) -> tuple[dict[str, Timings], dict[str, str]]:
    sinks: dict[str, SinkParticipant] = {
        "postgres": PostgresParticipant("postgres", dsn),
        "delta": open_participant("delta", DeltaOptions(root=str(work / "lake"), state_dir=str(work / "state"))),
        "iceberg": open_participant(
            "iceberg",
            IcebergOptions(
                warehouse=str(work / "warehouse"),
                state_dir=str(work / "state"),
                catalog=IcebergCatalogSettings(sqlite=str(work / "catalog.db")),
            ),
        ),
    }
    staged: list[list[StagedFile]] = []
    bindings = {name: [binding(name, args.mode)] for name in SINKS}
    for batch in range(args.batches):
        rows = batch_rows(batch, args.rows, args.update_share if args.mode == "upsert" else 0.0)
        writer = StagingWriter(str(work / "staging"), JOB, batch)
        per_file = -(-len(rows) // args.files)
        staged.append(
            [
                writer.write(f"part-{i}", rows[i * per_file : (i + 1) * per_file], IP_COUNT_ARROW_SCHEMA)
                for i in range(args.files)
            ]
        )
    timings = {name: Timings() for name in SINKS}
    checkpoints = {10, 50, 100, 200, 500, args.batches}
    try:
        for batch, files in enumerate(staged):
            txn = TransactionId(JOB, batch)
            order = SINKS[batch % 3 :] + SINKS[: batch % 3]
            for name in order:
                started = time.perf_counter()
                vote = sinks[name].prepare(txn, files, bindings[name])
                prepared = time.perf_counter()
                sinks[name].commit(txn)
                done = time.perf_counter()
                assert vote.vote_commit, f"{name}: {vote.reason}"
                timings[name].prepare_ms.append((prepared - started) * 1000)
                timings[name].commit_ms.append((done - prepared) * 1000)
                timings[name].rows += vote.rows
            if batch + 1 in checkpoints:
                for name in ("delta", "iceberg"):
                    sink = sinks[name]
                    assert isinstance(sink, LakehouseParticipant)
                    timings[name].files[batch + 1] = live_files(sink, TABLES[args.mode])
        after: dict[str, str] = {}
        for name in ("delta", "iceberg"):
            sink = sinks[name]
            assert isinstance(sink, LakehouseParticipant)
            seconds = compact(sink, TABLES[args.mode])
            last = TransactionId(JOB, args.batches - 1)
            sink.commit(last, staged[-1], bindings[name])  # a replay after the compaction: acknowledged
            after[name] = (
                f"{live_files(sink, TABLES[args.mode])} file(s) after compaction ({seconds:.1f} s); replay acknowledged"
            )
        return timings, after
    finally:
        for sink in sinks.values():
            sink.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--update-share", type=float, default=0.5)
    parser.add_argument("--mode", choices=["upsert", "append"], default="upsert",
                        help="upsert ip_counts on (window_start, ip), or append every row to a table")  # fmt: skip
    args = parser.parse_args()
    runs: list[dict[str, Timings]] = []
    with tempfile.TemporaryDirectory(prefix="onceflow-bench-lake-") as tmp, running_postgres() as server:
        for run in range(args.runs):
            work = Path(tmp) / f"run-{run}"
            with psycopg.connect(server.dsn(), autocommit=True) as admin:
                admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(f"bench_{run}")))
            dsn = server.dsn(f"bench_{run}")
            timings, after = run_once(args, work, dsn)
            runs.append(timings)
            for name in SINKS:
                t = timings[name]
                print(
                    f"run {run + 1} {name:<9} prepare p50 {percentile(t.prepare_ms, 0.5):7.1f} ms "
                    f"p99 {percentile(t.prepare_ms, 0.99):7.1f} ms | commit p50 {percentile(t.commit_ms, 0.5):7.1f} ms "
                    f"p99 {percentile(t.commit_ms, 0.99):7.1f} ms | {t.rows_per_s():9,.0f} rows/s"
                    + (f" | files {t.files}" if t.files else "")
                )
            for name, text in after.items():
                print(f"run {run + 1} {name:<9} {text}")
    print("\nmedian over runs")
    for name in SINKS:
        med = statistics.median
        prepare50 = med(percentile(r[name].prepare_ms, 0.5) for r in runs)
        commit50 = med(percentile(r[name].commit_ms, 0.5) for r in runs)
        commit99 = med(percentile(r[name].commit_ms, 0.99) for r in runs)
        total50 = med(percentile([p + c for p, c in zip(r[name].prepare_ms, r[name].commit_ms, strict=True)], 0.5)
                      for r in runs)  # fmt: skip
        rate = med(r[name].rows_per_s() for r in runs)
        cells = f"{prepare50:.1f} ms | {commit50:.1f} ms | {commit99:.1f} ms | {total50:.1f} ms | {rate:,.0f}"
        print(f"| {name} | {args.mode} | {cells} |")


if __name__ == "__main__":
    main()
