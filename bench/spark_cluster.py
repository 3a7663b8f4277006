"""The IP-count job on ``local[2]`` against a Spark standalone cluster on the same 2 cores: the overhead.

Assumptions: one machine (2 cores here), everything on loopback: the embedded broker, the
coordinator (Kafka-logged) and one participant process with the SQLite sink
(``onceflow.testing``'s ``TwoPhaseCommitCluster``), and the job's driver as its own process (``onceflow job run
onceflow.ipcount.job:job --master M``), as a user runs it. Three masters, side by side:

- ``local[2]``: the executors are threads of the driver's JVM;
- ``cluster-1x2``: a standalone cluster (``onceflow.testing.spark``) of one worker with 2 cores: one
  executor JVM with 2 cores and its own Python workers;
- ``cluster-2x1``: a standalone cluster of two workers with 1 core each: two executor JVMs, so the
  aggregation's shuffle crosses JVMs.

The clusters' daemons (a master and its workers, each its own JVM) run for the whole benchmark;
idle, they cost little. The executors get as much heap as ``local[2]``'s driver (1 GiB) and the
JIT compilers of an ordinary JVM. Every core of every variant runs on the same 2 cores, next to the
broker and the participant, so this measures what the cluster costs, not a speed-up.

Input: ``--events`` generated AccessEvents (event time at 100,000 events/s) preloaded once on
``bench_source`` (2 partitions, transactions of 1,000), then an end-of-input marker, so each run is
a bounded job that closes every window. Each run is a fresh job (own name, checkpoint and SQLite
table) reading them from the earliest offset with ``maxOffsetsPerTrigger = --batch`` and a 100 ms
trigger. Timed: from spawning the driver to the last result committed (the SQLite table's counts
add up to every event). Counted: the CPU seconds Spark spent meanwhile (the driver's session, with
its JVM and, in ``local[2]``, its Python workers; the cluster's daemons' sessions, with their
executor JVMs and Python workers), which the machine's load changes much less than wall time. From
Spark's progress: the first batch's time (the executors' Python workers start, the JIT warms up) and
the steady rate (rows per second of trigger time over every later batch that read input), per core.
The variants alternate within each of ``--repeats`` rounds; medians.

Usage:
    .venv/bin/python bench/spark_cluster.py [--events 1000000] [--batch 250000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.process import kill_session, session_cpu_seconds
from onceflow.core.toml_writer import to_toml
from onceflow.core.topics import SINK_TOPIC
from onceflow.ipcount.schema import ENTRYPOINT
from onceflow.ipcount.traffic.model import TrafficModel
from onceflow.runtime.worker.end_of_input import write_end_of_input
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.coordinator.cluster import TwoPhaseCommitCluster
from onceflow.testing.spark import SparkStandaloneCluster
from onceflow.testing.spark.input import encoded_events, produce_events

TOPIC = "bench_source"
ONCEFLOW = str(Path(sys.executable).parent / "onceflow")
_PROGRESS = re.compile(r"query\.progress .*?batch=(\d+) input_rows=(\d+) .*?duration_ms=(\d+)")


class Variant:
    """A master, the Spark settings of the drivers that use it, and its daemons' sessions."""

    def __init__(
        self, name: str, master: str, cores: int, conf: dict[str, str], cluster: SparkStandaloneCluster | None = None
    ) -> None:
        self.name, self.master, self.cores, self.conf, self.cluster = name, master, cores, conf, cluster

    def daemons_cpu_s(self) -> float:
        """CPU seconds of the cluster's master and workers so far, with everything they started
        (executor JVMs and their Python workers, alive or reaped); 0 for ``local[2]``."""
        if self.cluster is None:
            return 0.0
        daemons = [self.cluster.master, *self.cluster.workers]
        return sum(session_cpu_seconds(daemon.pid) for daemon in daemons if daemon.pid is not None)


def cluster_variant(name: str, cluster: SparkStandaloneCluster, cores: int) -> Variant:
    conf = {
        **cluster.client_conf,
        "spark.executor.cores": str(cores),
        "spark.executor.memory": "1g",
        "spark.executor.extraJavaOptions": "",  # the JIT compilers of an ordinary JVM, as local[2]'s
    }
    conf.pop("spark.driver.memory")
    return Variant(name, cluster.url, len(cluster.workers) * cores, conf, cluster)


def committed_events(database: Path, table: str) -> int:
    try:
        with sqlite3.connect(database) as connection:
            return int(connection.execute(f'SELECT COALESCE(SUM("count"), 0) FROM "{table}"').fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def run_once(
    variant: Variant, base: dict[str, Any], work: Path, name: str, *, database: Path, events: int
) -> dict[str, float]:
    """One bounded run of the job on ``variant``: seconds to the last result committed, and batch times."""
    settings = {
        **base,
        "job": name,
        "checkpoint_location": str(work / "checkpoints" / name),
        "outputs": {"results": [{"sink": "sqlite", "table": name, "keys": ["window_start", "ip"]}]},
        "spark": {"master": variant.master, "shuffle_partitions": 2, "query_name": name, "conf": variant.conf},
    }
    config = work / f"{name}.toml"
    config.write_text(to_toml(settings))
    config.chmod(0o600)  # a cluster's secret
    log_path = work / f"{name}.log"
    command = [ONCEFLOW, "job", "run", "onceflow.ipcount.job:job", "--config", str(config)]
    baseline_cpu = variant.daemons_cpu_s()
    started = time.monotonic()
    with log_path.open("wb") as log:
        driver = subprocess.Popen(
            [*command, "--master", variant.master], stdout=log, stderr=log, start_new_session=True
        )
    try:
        deadline = started + 900
        while committed_events(database, name) < events:
            if driver.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not finish (exit {driver.poll()}); see {log_path}")
            time.sleep(0.1)
        total = time.monotonic() - started
        # the driver's session (its JVM; local[2]'s executors), and what the cluster ran meanwhile
        cpu = session_cpu_seconds(driver.pid) + variant.daemons_cpu_s() - baseline_cpu
    finally:
        driver.terminate()
        try:
            driver.wait(60)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait()
        kill_session(driver.pid)
    return {"total_s": total, "cpu_s": cpu, **batch_times(log_path.read_text(errors="replace"))}


def batch_times(log: str) -> dict[str, float]:
    """From the driver's ``query.progress`` lines: the first batch's time (Python workers start, JIT
    warms up) and the steady rate, rows per second over every later batch that read input."""
    batches = [(int(b), int(rows), int(ms)) for b, rows, ms in _PROGRESS.findall(log)]
    steady = [(rows, ms) for batch, rows, ms in batches[1:] if rows > 0]
    return {
        "first_batch_s": batches[0][2] / 1000,
        "steady_events_per_s": sum(r for r, _ in steady) / (sum(ms for _, ms in steady) / 1000),
        "batches": len(batches),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=250_000, help="maxOffsetsPerTrigger")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="onceflow-bench-spark-cluster-"))
    with ExitStack() as stack:
        broker = stack.enter_context(EmbeddedBroker(work / "broker", 0))
        create_topic(broker.bootstrap_servers, TOPIC, partitions=2)
        create_topic(broker.bootstrap_servers, SINK_TOPIC, partitions=1)
        sinks = stack.enter_context(
            TwoPhaseCommitCluster(
                work / "system", bootstrap_servers=broker.bootstrap_servers, postgres_dsn="", sinks=["sqlite"]
            )
        )
        model = TrafficModel(seed=7, event_rate=100_000)
        for start in range(0, args.events, 100_000):
            values = encoded_events(model, start, min(args.events, start + 100_000))
            produce_events(broker.bootstrap_servers, values, topic=TOPIC)
        write_end_of_input({"bootstrap.servers": broker.bootstrap_servers}, TOPIC, "bench")
        one_worker = stack.enter_context(SparkStandaloneCluster(work / "cluster-1x2", workers=1, cores=2, memory="2g"))
        two_workers = stack.enter_context(SparkStandaloneCluster(work / "cluster-2x1", workers=2, cores=1, memory="1g"))
        variants = [
            Variant("local[2]", "local[2]", 2, {}),
            cluster_variant("cluster-1x2", one_worker, 2),
            cluster_variant("cluster-2x1", two_workers, 1),
        ]
        base: dict[str, Any] = {
            "entrypoint": ENTRYPOINT,
            "kafka": {"bootstrap_servers": broker.bootstrap_servers},
            "staging_root": str(sinks.staging_root),
            "coordinator": {"target": sinks.coordinator.target},
            "participants": [{"sink": ref.sink, "target": ref.target} for ref in sinks.refs],
            "trigger_interval_ms": 100,
            "source": {"topic": TOPIC, "max_offsets_per_trigger": args.batch},
            "restart": {"attempts": 0},
            "log": {"level": "INFO"},
        }
        results: dict[str, list[dict[str, float]]] = {v.name: [] for v in variants}
        for repeat in range(args.repeats):
            for variant in variants:
                name = f"r{repeat}_{variant.name.replace('[', '').replace(']', '').replace('-', '_')}"
                outcome = run_once(variant, base, work, name, database=sinks.sqlite_path, events=args.events)
                results[variant.name].append(outcome)
                print(f"{name}: {outcome}", flush=True)

    print(f"\nIP-count job, {args.events} events, batch {args.batch}, SQLite sink, {args.repeats} alternating rounds")
    header = ("master", "to last commit s", "Spark CPU s", "CPU us/event", "first batch s", "steady ev/s", "per core")
    print(f"{header[0]:<13}" + "".join(f"{h:>16}" for h in header[1:]))
    local = {key: statistics.median(r[key] for r in results["local[2]"]) for key in ("total_s", "cpu_s")}
    for variant in variants:
        runs = results[variant.name]
        median = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        print(
            f"{variant.name:<13}{median['total_s']:>16.1f}{median['cpu_s']:>16.1f}"
            f"{median['cpu_s'] / args.events * 1e6:>16.1f}{median['first_batch_s']:>16.1f}"
            f"{median['steady_events_per_s']:>16,.0f}{median['steady_events_per_s'] / variant.cores:>16,.0f}"
        )
        each = ", ".join(f"{r['total_s']:.0f} s / {r['cpu_s']:.0f} CPU s" for r in runs)
        print(
            f"{'':<13}x{median['total_s'] / local['total_s']:.2f} wall, x{median['cpu_s'] / local['cpu_s']:.2f} CPU"
            f" of local[2]; runs: {each}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
