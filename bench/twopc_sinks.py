"""Two-phase-commit latency and throughput across the three real sinks: one micro-batch of 1,000 rows per commit;
and, with ``--kafka-shards 1,2,4``, the Kafka sink alone served by 1, 2 and 4 participant shards side by side.

What it measures: ``CommitTransaction`` as the Spark driver calls it, from the call to the answer
COMMITTED (every participant has committed), for a batch of ``--rows`` rows staged as ``--files``
Arrow IPC files; and batches committed per second back to back (the next batch starts when the
previous commit returned, as a Spark driver does).

Assumptions:

- one machine (the project machine has 2 cores), everything on loopback, each component a real
  process: the embedded broker (``--fsync interval``), PostgreSQL (``fsync = on``,
  ``synchronous_commit = on``), the coordinator (Kafka transaction log, ``log_preparing`` on:
  three log records per commit, PREPARING, COMMITTING and END, where END rides in the next
  commit's PREPARING append when that comes within ``end_linger_ms``), and one participant
  process per sink: Kafka (``ip_count_sink``, a transactional producer), SQLite (WAL,
  ``synchronous = FULL``) and PostgreSQL (``PREPARE TRANSACTION``/``COMMIT PREPARED``). The driver
  (this script) is a sixth process.
- the batches are staged before the clock starts (staging is the Spark tasks' cost, not the
  commit's); every batch writes new keys (append-mode output), so no batch waits on another's
  row locks.
- services log at ``--log-level`` (WARNING by default: one INFO line per step and sink would be
  measured too); staging GC is on, as in production.
- each run starts everything afresh; the result is the median of the runs' p50, p99 and
  throughput.

Shards (``--kafka-shards 1,2,4``): only the Kafka sink, served by each number of participant
processes in turn (``kafka#0``, ``kafka#1``, ...), the runs of each count interleaved so that a
change of the machine's load hits every count alike. The batch's output is bound in append mode
(``--mode append``: each shard produces the rows of its share of the files) or as the IP-count
results (``--mode upsert``: every shard reads every file and produces the keys it owns). The sink
is checked by counting the topic's committed records.

Usage:
    .venv/bin/python bench/twopc_sinks.py [--runs 3] [--batches 300] [--warmup 20] [--rows 1000] [--files 4]
    .venv/bin/python bench/twopc_sinks.py --kafka-shards 1,2,4 [--mode append] [--runs 3] [--batches 60]
        [--rows 10000] [--files 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from samples import percentile

from onceflow.contract import SinkBinding, SinkMode, TransactionState
from onceflow.contract.staging import StagedFile
from onceflow.core.avro import IpCount
from onceflow.core.kafka import read_committed
from onceflow.core.settings import KafkaSettings
from onceflow.core.topics import SINK_TOPIC
from onceflow.ipcount.schema import ip_count_topic_binding
from onceflow.testing.coordinator.cluster import TwoPhaseCommitCluster, running_cluster
from onceflow.testing.sinks.postgres import PostgresServer, running_postgres

JOB = "bench"
#: Windows start an hour ago: the Kafka sink stamps records with window_start, and time retention
#: (7 days) would delete segments of older windows under the benchmark.
W0 = (int(time.time() * 1000) - 3_600_000) // 5_000 * 5_000


@dataclass(frozen=True)
class RunResult:
    latencies_ms: list[float]
    commits_per_s: float
    #: CPU milliseconds per measured batch, by process (broker, coordinator, each participant, driver).
    cpu_ms: dict[str, float] = field(default_factory=dict)

    @property
    def p50(self) -> float:
        return percentile(self.latencies_ms, 0.50)

    @property
    def p99(self) -> float:
        return percentile(self.latencies_ms, 0.99)


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


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU time of process ``pid`` so far (Linux ``/proc/<pid>/stat``)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    cluster: TwoPhaseCommitCluster,
    args: argparse.Namespace,
    bindings: dict[str, list[SinkBinding]] | None = None,
) -> RunResult:
    """Register, stage every batch, commit the warm-up batches, then time the measured ones (and
    count each process's CPU time over them)."""
    epoch = cluster.register(JOB, bindings=bindings)
    total = args.warmup + args.batches
    staged = [stage(cluster, batch, args.rows, args.files) for batch in range(total)]
    for batch in range(args.warmup):
        cluster.commit(JOB, epoch, batch, staged[batch])
    pids = {"broker": cluster.broker.pid if cluster.broker else None, "coordinator": cluster.coordinator.pid}
    pids.update({name: process.pid for name, process in cluster.participants.items()})
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    driver_before = time.process_time()
    latencies: list[float] = []
    started = time.perf_counter()
    for batch in range(args.warmup, total):
        t0 = time.perf_counter()
        response = cluster.commit(JOB, epoch, batch, staged[batch])
        latencies.append((time.perf_counter() - t0) * 1000)
        if response.state != TransactionState.COMMITTED:
            raise RuntimeError(f"batch {batch}: {response}")
    rate = args.batches / (time.perf_counter() - started)
    cpu = {name: (cpu_seconds(pid) - cpu_before[name]) * 1000 / args.batches for name, pid in pids.items()}
    cpu["driver"] = (time.process_time() - driver_before) * 1000 / args.batches
    return RunResult(latencies, rate, cpu)


def shard_run(args: argparse.Namespace, shards: int) -> RunResult:
    """The Kafka sink alone, served by ``shards`` participant processes."""
    topic = SINK_TOPIC if args.mode == "upsert" else "bench_shards"
    bindings = {"kafka": [ip_count_topic_binding("kafka", topic, SinkMode.APPEND)]} if args.mode == "append" else None
    with (
        tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp,
        running_cluster(
            Path(tmp),
            None,
            sinks=("kafka",),
            shards={"kafka": shards},
            coordinator_settings={"commit_wait_ms": 30_000, "log": {"level": args.log_level}},
            participant_log_level=args.log_level,
        ) as cluster,
    ):
        result = measure(cluster, args, bindings)
        held = sum(1 for _ in read_committed(KafkaSettings(bootstrap_servers=cluster.bootstrap_servers), topic))
        expected = (args.warmup + args.batches) * args.rows
        if held != expected:
            raise RuntimeError(f"{shards} shards: {topic} holds {held} committed records, expected {expected}")
    return result


def compare_shards(args: argparse.Namespace) -> int:
    counts = [int(n) for n in args.kafka_shards.split(",")]
    results: dict[int, list[RunResult]] = {n: [] for n in counts}
    for run in range(1, args.runs + 1):
        for shards in counts:
            result = shard_run(args, shards)
            results[shards].append(result)
            cpu_line = "  ".join(f"{name} {ms:.0f}" for name, ms in result.cpu_ms.items())
            print(
                f"run {run}, {shards} shard(s): p50 {result.p50:.1f} ms  p99 {result.p99:.1f} ms  "
                f"{result.commits_per_s:.2f} commits/s  {result.commits_per_s * args.rows:,.0f} rows/s  "
                f"(CPU ms per batch: {cpu_line})  load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    print(
        f"Kafka sink, {args.mode}: {args.batches} batches x {args.rows} rows ({args.files} files), "
        f"median of {args.runs} runs"
    )
    print("| shards | p50 | p99 | commits/s | rows/s | CPU ms per batch: broker | coordinator | each shard | driver |")
    print("|---|---|---|---|---|---|---|---|---|")
    for shards, runs in results.items():
        rate = statistics.median(r.commits_per_s for r in runs)

        def cpu_of(name: str, runs: list[RunResult] = runs) -> float:
            return statistics.median(r.cpu_ms[name] for r in runs)

        per_shard = statistics.median(
            statistics.fmean(ms for name, ms in r.cpu_ms.items() if name.startswith("kafka")) for r in runs
        )
        print(
            f"| {shards} | {statistics.median(r.p50 for r in runs):.1f} ms | "
            f"{statistics.median(r.p99 for r in runs):.1f} ms | {rate:.2f} | {rate * args.rows:,.0f} | "
            f"{cpu_of('broker'):.0f} | {cpu_of('coordinator'):.0f} | {per_shard:.0f} | {cpu_of('driver'):.0f} |"
        )
    return 0


def one_run(postgres: PostgresServer, args: argparse.Namespace, run: int) -> RunResult:
    with (
        tempfile.TemporaryDirectory(prefix="bench-twopc-") as tmp,
        running_cluster(
            Path(tmp),
            postgres,
            coordinator_settings={"commit_wait_ms": 30_000, "log": {"level": args.log_level}},
            participant_log_level=args.log_level,
        ) as cluster,
    ):
        result = measure(cluster, args)
        total = args.warmup + args.batches
        rows = {sink: len(found) for sink, found in cluster.sink_rows().items()}
        if set(rows.values()) != {total * args.rows}:
            raise RuntimeError(f"run {run}: sinks hold {rows}, expected {total * args.rows} rows each")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="independent runs (median reported)")
    parser.add_argument("--batches", type=int, default=300, help="measured commits per run")
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured commits first, per run")
    parser.add_argument("--rows", type=int, default=1000, help="rows per batch")
    parser.add_argument("--files", type=int, default=4, help="staged files per batch (Spark tasks)")
    parser.add_argument("--log-level", default="WARNING", help="log level of the coordinator and participants")
    parser.add_argument("--kafka-shards", default="", help="compare the Kafka sink alone at these shard counts: 1,2,4")
    parser.add_argument("--mode", choices=("append", "upsert"), default="append", help="the shards' binding mode")
    args = parser.parse_args()
    if args.kafka_shards:
        return compare_shards(args)

    results: list[RunResult] = []
    with running_postgres() as postgres:
        for run in range(1, args.runs + 1):
            result = one_run(postgres, args, run)
            results.append(result)
            ms = result.latencies_ms
            print(
                f"run {run}: p50 {result.p50:.1f} ms  p99 {result.p99:.1f} ms  mean {statistics.fmean(ms):.1f} ms  "
                f"max {max(ms):.1f} ms  {result.commits_per_s:.1f} commits/s  (CPU ms per batch: "
                + "  ".join(f"{name} {cpu:.1f}" for name, cpu in result.cpu_ms.items())
                + f")  load {os.getloadavg()[0]:.1f}",
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
