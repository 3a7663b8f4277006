"""End-to-end benchmark of the whole pipeline, driven through the demo machinery (``onceflow demo``).

Measures, for one run of N generated events:

- **throughput**: events per second from the generator to the consumer store, i.e. N divided by
  the time from the first source event becoming visible (read_committed) to the moment the
  consumer store has counted all N events;
- **result latency**: per 5 s window, from the moment the window *closes* (the first time an event
  with ``event_time >= window_end + lateness`` is visible in ``ip_count_source`` with
  read_committed, which is what lets the job's watermark pass it) to the moment the window's first
  result row is readable in the consumer store. p50 and p99 over all windows of the run (paced runs
  only: unpaced, a window closes as fast as events arrive, so its latency is the backlog's, and the
  observer that follows every source event would take the cores the run is measured on).
- **the parts' ceiling** (unpaced runs, ``--rate 0``): the CPU seconds each service spent over the
  same span (its process tree: the Spark job with its JVM and Python workers, the broker, the
  generator, the coordinator, the participant, the consumer), summed per event. The machine's cores
  divided by that cost is the rate the parts allow together on this machine: what the pipeline would
  reach if no core were ever idle. The measured rate over that ceiling is the pipeline's share of it;
  the rest is time the cores waited (barriers, round trips, a part that cannot use both cores).
- **where Spark waited** (unpaced runs): over the same span, the time the Spark query ran no batch,
  from its ``query.progress`` lines: before its first batch with input, between batches (a batch
  shorter than the trigger waits for the next tick), before the no-data batch that emits the last
  windows, and after its last batch (the consumer's tail).

Assumptions: a single machine (everything embedded, as ``onceflow demo``); two observers run next
to the pipeline: a read_committed consumer of ``ip_count_source`` (record timestamps are event
times) and a poller of the consumer's SQLite store (every 100 ms, so latencies carry up to 0.1 s of
polling error). With ``--rate 0`` the generator is unpaced (capacity); windows then close as fast as
the events arrive, so only paced runs report a latency. The run must end EXACT, or the numbers are void.

    .venv/bin/python bench/e2e_demo.py --events 60000 --rate 1000            # chaos off
    .venv/bin/python bench/e2e_demo.py --events 60000 --rate 1000 --chaos    # chaos on
    .venv/bin/python bench/e2e_demo.py --events 300000 --rate 0              # unpaced: capacity
    .venv/bin/python bench/e2e_demo.py --events 100000 --rate 0 --apache-kafka   # the same on Apache Kafka

``--apache-kafka`` runs the pipeline on a real single-node Apache Kafka (the version ``make setup``
fetched, started with full JIT) through ``onceflow demo --bootstrap-servers`` instead of the embedded
broker; everything else is the same.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import io
import itertools
import logging
import os
import re
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from cpu_meter import CpuMeter, children, format_cpu, own_threads_cpu
from samples import percentile

from onceflow.core import defaults
from onceflow.core.logging import configure_logging
from onceflow.core.topics import SOURCE_TOPIC
from onceflow.demo import DemoOptions, DemoRun
from onceflow.demo.run_dir import RunDir, RunState
from onceflow.demo.supervisor import EventKind

#: The services of a demo run, as ``onceflow <service>`` names them (the generator is the Connect worker).
SERVICES = ("broker", "coordinator", "participant", "consumer", "spark", "connect-worker")


@dataclass
class SourceWatcher:
    """Wall time at which each window closed: an event ``>= window_end + lateness`` became visible."""

    bootstrap: str
    state: RunState
    close_at: dict[int, float] = field(default_factory=dict)
    first_visible: float | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    #: Started when the first event is visible: the span the throughput is measured over.
    meter: CpuMeter | None = None
    #: This process's CPU seconds when the meter started.
    bench_cpu: float = 0.0
    #: Follow every event for the windows' close times; False (unpaced runs): stop at the first one.
    windows: bool = True

    def run(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "bench-e2e-source-watcher",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            },
            # librdkafka's own log (e.g. "connection refused" while the broker is down) to the run's log.
            logger=logging.getLogger("bench.source_watcher"),
        )
        consumer.assign([TopicPartition(SOURCE_TOPIC, p, 0) for p in range(self.state.source_partitions)])
        window, lateness = defaults.WINDOW_MS, defaults.ALLOWED_LATENESS_MS
        next_window = self.state.event_time_start_ms - self.state.event_time_start_ms % window - window
        newest = -1
        while not self.stop.is_set():
            batch = consumer.consume(1000, 0.1)
            now = time.time()
            for message in batch:
                if message.error() is not None:
                    continue
                if self.first_visible is None:
                    self.first_visible = now
                    if self.meter is not None:
                        self.meter.start()
                        self.bench_cpu = own_threads_cpu()
                    if not self.windows:  # the observer would take the cores it measures
                        self.stop.set()
                        break
                newest = max(newest, message.timestamp()[1])
            while next_window + window + lateness <= newest:
                self.close_at.setdefault(next_window, now)
                next_window += window
        consumer.close()


@dataclass
class StoreWatcher:
    """Wall time at which each window first became readable in the consumer store, and when all N were.

    Each poll reads only the rows stored since the last one (``rowid`` grows with every insert; an
    upsert that updates a row keeps it), so the observer's CPU stays flat as the table grows instead
    of scanning it every 100 ms (a full ``SUM`` took 1.5 µs an event of the measured cores at 6,000,000
    events). The total is confirmed with one full ``SUM`` before the run counts as complete, and
    re-read in full every :attr:`full_every` polls, so an updated row cannot go unseen.
    """

    path: Path
    events: int
    readable_at: dict[int, float] = field(default_factory=dict)
    all_counted_at: float | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    meter: CpuMeter | None = None
    #: CPU seconds per service from the first event visible to all counted, and this process's CPU then.
    cpu: dict[str, float] = field(default_factory=dict)
    bench_cpu: float = 0.0
    full_every: int = 20

    def run(self) -> None:
        last_rowid, total, polls = 0, 0, 0
        while not self.stop.wait(0.1):
            if not self.path.exists():
                continue
            try:
                with closing(sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=1.0)) as db:
                    db.execute("BEGIN")  # one snapshot for the new rows and the full sum
                    rows = db.execute(
                        "SELECT rowid, window_start, count FROM results WHERE rowid > ? ORDER BY rowid", (last_rowid,)
                    ).fetchall()
                    now = time.time()
                    for rowid, window_start, count in rows:
                        self.readable_at.setdefault(int(window_start), now)
                        total += int(count)
                        last_rowid = int(rowid)
                    polls += 1
                    if self.all_counted_at is None and (total >= self.events or polls % self.full_every == 0):
                        (total,) = db.execute("SELECT COALESCE(SUM(count), 0) FROM results").fetchone()
                        total = int(total)
                        if total >= self.events:
                            self.all_counted_at = now
                            if self.meter is not None:
                                self.cpu, self.bench_cpu = self.meter.stop(), own_threads_cpu()
            except sqlite3.Error:
                continue


def service_pid(name: str) -> int | None:
    """The pid of this process's child that runs ``onceflow <name>`` now (a restarted service has a new one)."""
    for pid in children(os.getpid()):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(argv) > 2 and argv[1].endswith(b"/onceflow") and argv[2] == name.encode():
            return pid
    return None


def service_meter() -> CpuMeter:
    """CPU seconds of every service's process tree (see the module docstring); this process's own
    (the observers and the demo's supervisor threads) is taken apart, with :func:`own_threads_cpu`."""
    meter = CpuMeter()
    for name in SERVICES:
        meter.add(name, functools.partial(service_pid, name))
    return meter


def parts_ceiling(cpu: dict[str, float], bench_cpu: float, events: int, span: float) -> list[str]:
    """The rate the parts' CPU allows on this machine's cores, the measured rate's share of it, and
    how busy the cores were (the observers' CPU is counted there: it ran on the same cores)."""
    per_event = sum(cpu.values()) / events
    cores = os.cpu_count() or 1
    ceiling = cores / per_event
    busiest = max(cpu, key=lambda name: cpu[name])
    busy = (sum(cpu.values()) + bench_cpu) / (cores * span)
    return [
        f"parts' ceiling on {cores} cores: {ceiling:,.0f} events/s (services' CPU {per_event * 1e6:.1f} µs/event); "
        f"measured / ceiling = {events / span / ceiling:.2f}; the most CPU: {busiest} "
        f"({cpu[busiest] / sum(cpu.values()):.0%})",
        f"cores busy over the span: {busy:.0%} (services, and this process's observers at "
        f"{bench_cpu / events * 1e6:.1f} µs/event)",
    ]


_PROGRESS = re.compile(r"^(\S+Z) .*query\.progress .*\bbatch=(\d+) input_rows=(\d+) .*\bduration_ms=(\d+)")


def spark_batches(log: Path) -> list[tuple[float, float, int]]:
    """``(start, end, input rows)`` of every micro-batch in the Spark service's log (its
    ``query.progress`` lines: logged at the batch's end, with its duration)."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        match = _PROGRESS.match(line)
        if match:
            end = datetime.fromisoformat(match[1]).timestamp()
            found.append((end - int(match[4]) / 1000, end, int(match[3])))
    return found


def spark_waits(batches: list[tuple[float, float, int]], first: float, last: float) -> str:
    """Where the span ``first`` -> ``last`` had no Spark batch running: before its first batch with
    input (the generator alone, the trigger's next tick), between batches (a batch shorter than the
    trigger waits for its next tick), and after the last batch (the consumer's tail)."""
    inside = [(start, end, rows) for start, end, rows in batches if end > first and start < last]
    first_data = next((b for b in inside if b[2] > 0), None)
    if first_data is None:
        return "Spark: no batch with input inside the span"
    before = max(0.0, first_data[0] - first)
    between = sum(max(0.0, b[0] - a[1]) for a, b in itertools.pairwise(inside) if a[1] >= first_data[1])
    emitting = max(0.0, inside[-1][0] - inside[-2][1]) if len(inside) > 1 and inside[-1][2] == 0 else 0.0
    after = max(0.0, last - inside[-1][1])
    running = sum(min(end, last) - max(start, first) for start, end, _ in inside)
    return (
        f"Spark over the span ({last - first:.1f}s): batches running {running:.1f}s; waiting for the trigger "
        f"{before + between:.1f}s (before the first batch with input {before:.1f}s, between batches "
        f"{between - emitting:.1f}s, before the no-data batch that emits the last windows {emitting:.1f}s); "
        f"after its last batch {after:.1f}s (the consumer's tail)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--rate", type=float, default=1000.0, help="generator events/s (0 = unpaced)")
    parser.add_argument("--chaos", action="store_true")
    parser.add_argument("--chaos-interval", type=float, default=8.0)
    parser.add_argument(
        "--input-after-job",
        action="store_true",
        help="start the generator once the Spark job serves (a running pipeline, without its start-up)",
    )
    parser.add_argument("--trigger-ms", type=int, default=defaults.CHECKPOINT_INTERVAL_MS)
    parser.add_argument("--run-dir", type=Path, default=None, help="default: a fresh temporary directory")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--apache-kafka", action="store_true", help="run on Apache Kafka, not the embedded broker")
    args = parser.parse_args(argv)
    kafka = None
    if args.apache_kafka:
        from onceflow.testing.broker.apache_kafka import ApacheKafka

        kafka = ApacheKafka(Path(tempfile.mkdtemp(prefix="onceflow-bench-kafka-")), jvm_options=()).start()

    # Step 1: a fresh run dir whose state (ports, event-time start) the watchers can read up front;
    # the demo then "resumes" it, which for a fresh run is the same as starting it.
    root = args.run_dir or Path(tempfile.mkdtemp(prefix="onceflow-bench-e2e-")) / "run"
    options = DemoOptions(
        run_dir=root, events=args.events, rate=args.rate, chaos=args.chaos, chaos_interval_s=args.chaos_interval,
        input_after_job=args.input_after_job,
        chaos_seed=1, trigger_ms=args.trigger_ms, timeout_s=args.timeout, plain=True,
        bootstrap_servers=kafka.bootstrap_servers if kafka is not None else "",
    )  # fmt: skip
    run_dir = RunDir(root)
    state = run_dir.create(options.new_state(root.name))
    (run_dir.root / "logs").mkdir(parents=True, exist_ok=True)
    log = (run_dir.root / "logs" / "demo.log").open("a")
    configure_logging("INFO", "kv", stream=log)

    # Step 2: the observers.
    meter = service_meter()
    if kafka is not None:
        meter.add("apache-kafka", kafka.pid)
    bootstrap = state.bootstrap_servers or f"127.0.0.1:{state.ports['broker']}"
    source = SourceWatcher(bootstrap, state, meter=meter, windows=args.rate > 0)
    store = StoreWatcher(run_dir.data("consumer") / "results.db", args.events, meter=meter)
    threads = [threading.Thread(target=w.run, daemon=True) for w in (source, store)]
    for thread in threads:
        thread.start()

    # Step 3: the run, to its verdict.
    out = io.StringIO()
    demo = DemoRun(dataclasses.replace(options, resume=True), out=out)
    started = time.time()
    try:
        code = demo.run()
    finally:
        if kafka is not None:
            kafka.stop()
    elapsed = time.time() - started
    for watcher in (source, store):
        watcher.stop.set()
    for thread in threads:
        thread.join(10)

    # Step 4: the numbers.
    latencies = [
        max(0.0, store.readable_at[w] - closed) for w, closed in source.close_at.items() if w in store.readable_at
    ]
    verdict = "EXACT" if code == 0 else f"NOT EXACT (exit {code})"
    kills = demo.supervisor.journal.counts
    print(f"run dir: {root}")
    rate = "unpaced" if args.rate <= 0 else f"{args.rate:.0f}/s"
    chaos = "on" if args.chaos else "off"
    print(f"events={args.events} rate={rate} chaos={chaos} trigger={args.trigger_ms}ms wall={elapsed:.0f}s")
    print(f"verdict: {verdict}")
    print(f"kills={kills[EventKind.KILLED]} recoveries={kills[EventKind.RECOVERED]}")
    if source.first_visible is not None and store.all_counted_at is not None:
        span = store.all_counted_at - source.first_visible
        print(f"throughput: {args.events / span:,.0f} events/s (first event visible -> all counted: {span:.1f}s)")
        if store.cpu and not args.chaos:
            print(format_cpu({name: seconds for name, seconds in store.cpu.items() if seconds}, args.events))
            for line in parts_ceiling(store.cpu, store.bench_cpu - source.bench_cpu, args.events, span):
                print(line)
            spark_log = root / "logs" / "spark.log"
            if spark_log.exists():
                print(spark_waits(spark_batches(spark_log), source.first_visible, store.all_counted_at))
    else:
        print("throughput: n/a (the run did not complete)")
    if latencies:
        print(
            f"result latency (window close -> readable in the consumer store) over {len(latencies)} windows: "
            f"p50 {statistics.median(latencies):.2f}s, p99 {percentile(latencies, 0.99):.2f}s, "
            f"max {max(latencies):.2f}s"
        )
    if code != 0:
        print(out.getvalue()[-4000:], file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
