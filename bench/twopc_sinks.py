"""Two-phase-commit latency and throughput across the three real sinks: one micro-batch of 1,000 rows per commit.

What it measures: ``CommitTransaction`` as the Spark driver calls it, from the call to the answer
COMMITTED (every participant has committed), for a batch of ``--rows`` rows staged as ``--files``
Avro files; and batches committed per second back to back (the next batch starts when the
previous commit returned, as a Spark driver does).

Assumptions:

- one machine (the project machine has 2 cores), everything on loopback, each component a real
  process: the embedded broker (``--fsync interval``), PostgreSQL (``fsync = on``,
  ``synchronous_commit = on``), the coordinator (Kafka transaction log, ``log_preparing`` on:
  three log writes per commit), and one participant process per sink: Kafka (``ip_count_sink``,
  a transactional producer), SQLite (WAL, ``synchronous = FULL``) and PostgreSQL
  (``PREPARE TRANSACTION``/``COMMIT PREPARED``). The driver (this script) is a sixth process.
- the batches are staged before the clock starts (staging is the Spark tasks' cost, not the
  commit's); every batch writes new keys (append-mode output), so no batch waits on another's
  row locks.
- services log at ``--log-level`` (WARNING by default: one INFO line per step and sink would be
  measured too); staging GC is on, as in production.
- each run starts everything afresh; the result is the median of the runs' p50, p99 and
  throughput.

Usage:
    .venv/bin/python bench/twopc_sinks.py [--runs 3] [--batches 300] [--warmup 20] [--rows 1000] [--files 4]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.avro import IpCount
from onceflow.core.staging import StagedFile
from onceflow.proto.v1 import common_pb2
from onceflow.testing.coordinator.cluster import TwoPhaseCommitCluster
from onceflow.testing.sinks.postgres import PostgresServer, running_postgres

JOB = "bench"
#: Windows start an hour ago: the Kafka sink stamps records with window_start, and time retention
#: (7 days) would delete segments of older windows under the benchmark.
W0 = (int(time.time() * 1000) - 3_600_000) // 5_000 * 5_000


@dataclass(frozen=True)
class RunResult:
    latencies_ms: list[float]
    commits_per_s: float

    @property
    def p50(self) -> float:
        return percentile(self.latencies_ms, 0.50)

    @property
    def p99(self) -> float:
        return percentile(self.latencies_ms, 0.99)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def batch_rows(batch: int, rows: int) -> list[IpCount]:
    start = W0 + batch * 5_000
    end = start + 5_000
    return [
        IpCount(window_start=start, window_end=end, ip=f"10.{i // 65_536}.{i // 256 % 256}.{i % 256}", count=i)
        for i in range(rows)
    ]


def stage(cluster: TwoPhaseCommitCluster, batch: int, rows: int, files: int) -> list[StagedFile]:
    data = batch_rows(batch, rows)
    per_file = -(-rows // files)
    return cluster.stage(JOB, batch, *(data[i : i + per_file] for i in range(0, rows, per_file)))


def one_run(postgres: PostgresServer, args: argparse.Namespace, run: int) -> RunResult:
    dbname = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres.dsn(), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    with tempfile.TemporaryDirectory(prefix="bench-twopc-") as tmp, EmbeddedBroker(Path(tmp) / "broker") as broker:
        cluster = TwoPhaseCommitCluster(
            Path(tmp) / "cluster",
            bootstrap_servers=broker.bootstrap_servers,
            postgres_dsn=postgres.dsn(dbname),
            coordinator_settings={"commit_wait_ms": 30_000, "log": {"level": args.log_level}},
            participant_log_level=args.log_level,
        )
        with cluster:
            epoch = cluster.register(JOB)
            total = args.warmup + args.batches
            staged = [stage(cluster, batch, args.rows, args.files) for batch in range(total)]
            for batch in range(args.warmup):
                cluster.commit(JOB, epoch, batch, staged[batch])
            latencies: list[float] = []
            started = time.perf_counter()
            for batch in range(args.warmup, total):
                t0 = time.perf_counter()
                response = cluster.commit(JOB, epoch, batch, staged[batch])
                latencies.append((time.perf_counter() - t0) * 1000)
                if response.state != common_pb2.TRANSACTION_STATE_COMMITTED:
                    raise RuntimeError(f"batch {batch}: {response}")
            elapsed = time.perf_counter() - started
            rows = {sink: len(found) for sink, found in cluster.sink_rows().items()}
            if set(rows.values()) != {total * args.rows}:
                raise RuntimeError(f"run {run}: sinks hold {rows}, expected {total * args.rows} rows each")
    return RunResult(latencies, args.batches / elapsed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="independent runs (median reported)")
    parser.add_argument("--batches", type=int, default=300, help="measured commits per run")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured commits first, per run")
    parser.add_argument("--rows", type=int, default=1000, help="rows per batch")
    parser.add_argument("--files", type=int, default=4, help="staged files per batch (Spark tasks)")
    parser.add_argument("--log-level", default="WARNING", help="log level of the coordinator and participants")
    args = parser.parse_args()

    results: list[RunResult] = []
    with running_postgres() as postgres:
        for run in range(1, args.runs + 1):
            result = one_run(postgres, args, run)
            results.append(result)
            ms = result.latencies_ms
            print(
                f"run {run}: p50 {result.p50:.1f} ms  p99 {result.p99:.1f} ms  mean {statistics.fmean(ms):.1f} ms  "
                f"max {max(ms):.1f} ms  {result.commits_per_s:.1f} commits/s",
                flush=True,
            )
    print(
        f"2PC across kafka+sqlite+postgres: {args.batches} batches x {args.rows} rows ({args.files} files), "
        f"median of {args.runs} runs"
    )
    print(
        f"  latency ms: p50 {statistics.median(r.p50 for r in results):.1f}  "
        f"p99 {statistics.median(r.p99 for r in results):.1f}"
    )
    print(f"  throughput: {statistics.median(r.commits_per_s for r in results):.1f} commits/s back to back")
    return 0


if __name__ == "__main__":
    sys.exit(main())
