"""onceflow next to Apache Flink 2.3 on the same IP-count job, the same events, the same cores, in one run.

    make flink-anchor                     # builds .cache/flink (virtualenv + connector jars), then runs this
    .venv/bin/python bench/flink_anchor.py --flink-python .cache/flink/venv/bin/python \\
        --flink-jars .cache/flink/2.3.0/libs [--events 2000000] [--repeats 3] [--brokers embedded,apache-kafka]

Assumptions: one machine (2 cores here), everything on loopback, every service a child process. For
each broker (the embedded broker, then Apache Kafka 4.3 from ``make setup``), one set of services
(the broker, onceflow's coordinator and a participant hosting the Kafka, SQLite and PostgreSQL sinks)
and one preloaded input: ``--events`` AccessEvents (single-object Avro, 2 partitions) and the runtime's
end-of-input markers (``bench/ip_count_rig.py``). Then ``--repeats`` rounds, each running every system
once, over the same input, in an order rotated per round (no system always runs first, or after the
same other one):

- ``onceflow EOS, 3 sinks`` / ``onceflow EOS, Kafka only`` (the driver staging each batch's rows) /
  ``onceflow EOS, 3 sinks, tasks stage`` (the write tasks staging them, the default) / ``onceflow ALO``
  (``bench/onceflow_runs.py``): Spark ``local[2]`` in this process (warm: the session is built
  once, and untimed runs per broker warm its JIT and Python workers, as Flink's JVM start is not
  timed either; again before a onceflow run when the session idled long enough for Spark to kill
  its Python workers, as a Flink run with the Python decoder lets it),
  ``maxOffsetsPerTrigger = --batch``, a 100 ms trigger;
- ``Flink EOS, JVM decoder`` / ``Flink EOS, Python decoder`` (``bench/flink/ip_count_job.py``, in
  Flink's own virtualenv): a read_committed Kafka source bounded at the input's end offsets (Flink's
  end of input), 5 s event-time windows, 5 s watermark delay, an exactly-once Kafka sink, 5 s
  checkpoints, parallelism 2. Its JVM starts per run, and is not timed.

Every run writes outputs of its own and is timed to the **last result committed** (read back with
read_committed, and from SQLite and PostgreSQL), then checked against the truth (a void run stops the
benchmark). Clocks: onceflow from its first record read (first batch's trigger start + the phases
before its tasks); Flink from the moment its job is RUNNING (its tasks are being deployed). "From
submission" starts both at the call that submits the planned job (Spark: ``start_query``; Flink:
``execute_sql(INSERT)``, its SQL planning included). CPU µs per event of every process over the same
span: the Spark JVM with its Python workers, or Flink's JVM with its Python workers; the broker;
onceflow's coordinator, participant and PostgreSQL. Medians over the repeats, with the load average,
and the ratios paired per round to Flink's JVM decoder and to onceflow ALO.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from cpu_meter import CpuMeter, format_cpu
from ip_count_rig import (
    LATENESS_MS,
    WINDOW_MS,
    Preloaded,
    ResultWatcher,
    RunOutputs,
    VoidRunError,
    broker,
    ip_count_body,
    preload,
    sink_services,
)
from onceflow_runs import (
    PYTHON_WORKERS_REAPED_AFTER_S,
    base_settings,
    in_turn,
    job_settings,
    run_variant,
    spark_jvm_pid,
    warm_up,
)

from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.core.avro.single_object import MAGIC
from onceflow.spark.runner import build_session
from onceflow.testing.broker.clients import create_topic

SYSTEMS = {
    "onceflow-eos-3": "onceflow EOS, 3 sinks",
    "onceflow-eos-kafka": "onceflow EOS, Kafka only",
    "onceflow-eos-3-tasks": "onceflow EOS, 3 sinks, tasks stage",
    "onceflow-alo": "onceflow ALO",
    "flink-jvm": "Flink EOS, JVM decoder",
    "flink-python": "Flink EOS, Python decoder",
}
_ONCEFLOW_VARIANT = {
    "onceflow-eos-3": "exactly-once",
    "onceflow-eos-kafka": "exactly-once-kafka",
    "onceflow-eos-3-tasks": "exactly-once-tasks",
    "onceflow-alo": "at-least-once",
}


def _lines(process: subprocess.Popen[str]) -> Iterator[dict[str, Any]]:
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("{"):
            yield json.loads(line)


def run_flink(
    decoder: str, name: str, *, bootstrap: str, data: Preloaded, args: argparse.Namespace, meter: CpuMeter, work: Path
) -> dict[str, Any]:
    """One Flink run of ``decoder`` (jvm | python), timed to the last result committed."""
    sink = name.replace("-", "_")
    create_topic(bootstrap, sink, partitions=1)
    jars = sorted(str(p.resolve()) for p in Path(args.flink_jars).glob("*.jar"))
    command = [
        args.flink_python,
        str(Path(__file__).parent / "flink" / "ip_count_job.py"),
        f"--bootstrap={bootstrap}",
        f"--topic={data.topic}",
        f"--end-offsets={json.dumps(data.end_offsets)}",
        f"--sink-topic={sink}",
        f"--decoder={decoder}",
        f"--header={(MAGIC + ACCESS_EVENT_SERDE.fingerprint).hex()}",
        f"--jars={','.join(jars)}",
        f"--window-ms={WINDOW_MS}",
        f"--lateness-ms={LATENESS_MS}",
    ]
    log = (work / f"{name}.log").open("w")
    env = {**os.environ, "FLINK_LOG_DIR": str(work / f"{name}-logs")}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    meter.add("flink", process.pid)
    watcher = ResultWatcher(bootstrap, RunOutputs(topic=sink, decode=ip_count_body), data.events)
    events: dict[str, float] = {}

    def read_events() -> None:
        for line in _lines(process):
            events[line["event"]] = line["t"]

    threading.Thread(target=read_events, daemon=True).start()
    try:
        deadline = time.monotonic() + 300
        while "planning" not in events:
            if process.poll() is not None or time.monotonic() > deadline:
                raise VoidRunError(f"{name}: Flink did not start; see {work / f'{name}.log'}")
            time.sleep(0.02)
        meter.start()

        def failed() -> BaseException | None:
            code = process.poll()
            return RuntimeError(f"Flink exited with {code}; see {work / f'{name}.log'}") if code else None

        done = watcher.wait(args.timeout, failed)
        cpu = meter.stop()
        process.wait(120)
    finally:
        watcher.close()
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
        del meter.roots["flink"]
    watcher.verify(data.truth)
    return {
        "to_last_result": data.events / (done - events["running"]),
        "from_submission": data.events / (done - events["planning"]),
        "seconds": done - events["running"],
        "cpu": cpu,
    }


def summary(results: dict[str, dict[str, list[dict[str, Any]]]], events: int) -> None:
    brokers = list(results)
    print("\nmedian events/s to the last result committed (from submission in brackets), CPU µs per event")
    width = max(len(label) for label in SYSTEMS.values()) + 2
    print(f"{'system':<{width}}" + "".join(f"{b:>34}" for b in brokers))
    for system, label in SYSTEMS.items():
        cells = []
        for broker_kind in brokers:
            runs = results[broker_kind].get(system, [])
            if not runs:
                cells.append(f"{'-':>34}")
                continue
            last = statistics.median(r["to_last_result"] for r in runs)
            submitted = statistics.median(r["from_submission"] for r in runs)
            cpu = statistics.median(sum(r["cpu"].values()) for r in runs) / events * 1e6
            cells.append(f"{last:>12,.0f} ({submitted:>9,.0f}) {cpu:>6.1f} µs")
        print(f"{label:<{width}}" + "".join(cells))
    for broker_kind in brokers:
        for system, runs in results[broker_kind].items():
            if runs:
                cpu = {k: statistics.median(r["cpu"].get(k, 0.0) for r in runs) for k in runs[0]["cpu"]}
                print(f"{broker_kind:<14}{SYSTEMS[system]:<{width}}{format_cpu(cpu, events)}")
        for against, label in (("flink-jvm", "Flink JVM decoder"), ("onceflow-alo", "onceflow ALO")):
            anchor = results[broker_kind].get(against, [])
            for system in ("onceflow-eos-3", "onceflow-eos-kafka", "onceflow-eos-3-tasks", "onceflow-alo"):
                runs = results[broker_kind].get(system, [])
                if system != against and runs and anchor:
                    paired = [r["to_last_result"] / a["to_last_result"] for r, a in zip(runs, anchor, strict=False)]
                    print(
                        f"{broker_kind:<14}{SYSTEMS[system]} / {label}, per round: "
                        f"median {statistics.median(paired):.2f} ({', '.join(f'{x:.2f}' for x in paired)})"
                    )


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--event-rate", type=int, default=100_000, help="events per second of event time")
    parser.add_argument("--batch", type=int, default=500_000, help="onceflow's maxOffsetsPerTrigger")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--brokers", default="embedded,apache-kafka")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--flink-python", default=".cache/flink/venv/bin/python")
    parser.add_argument("--flink-jars", default=".cache/flink/2.3.0/libs")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one run may take")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}; known: {', '.join(SYSTEMS)}")
    if any(s.startswith("flink") for s in systems) and not Path(args.flink_python).exists():
        parser.error(f"no Flink virtualenv at {args.flink_python}: run `make flink-anchor` (it builds it)")
    work = Path(tempfile.mkdtemp(prefix="onceflow-bench-flink-"))
    print(f"work dir {work}; load average at the start: {load_average()}", flush=True)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    spark: Any = None
    try:
        for broker_kind in [b.strip() for b in args.brokers.split(",") if b.strip()]:
            results[broker_kind] = {s: [] for s in systems}
            here = work / broker_kind
            with ExitStack() as stack:
                bootstrap, broker_pid = stack.enter_context(broker(broker_kind, here))
                services = stack.enter_context(
                    sink_services(bootstrap, here / "system", ["kafka", "sqlite", "postgres"])
                )
                started = time.monotonic()
                data = preload(bootstrap, "bench_source", args.events, args.event_rate)
                print(f"{broker_kind}: preloaded {args.events} events in {time.monotonic() - started:.1f}s", flush=True)
                base = base_settings(bootstrap, here, services, "local[2]")
                if spark is None and any(not s.startswith("flink") for s in systems):
                    spark = build_session(job_settings(base, "exactly-once", here, "bench"), "local[2]")
                if spark is not None:
                    warm_up(
                        spark,
                        base,
                        f"{broker_kind}-warmup",
                        work=here,
                        data=data,
                        services=services,
                        meter=CpuMeter(),
                        batch=args.batch,
                        timeout_s=args.timeout,
                    )
                spark_used = time.monotonic()
                for repeat in range(args.repeats):
                    for system in in_turn(systems, repeat):
                        meter = CpuMeter()
                        meter.add("broker", broker_pid)
                        name = f"{broker_kind}-{system}-{repeat}"
                        if system.startswith("flink"):
                            outcome = run_flink(
                                system.removeprefix("flink-"),
                                name,
                                bootstrap=bootstrap,
                                data=data,
                                args=args,
                                meter=meter,
                                work=here,
                            )
                        else:
                            if time.monotonic() - spark_used > PYTHON_WORKERS_REAPED_AFTER_S:
                                warm_up(spark, base, f"{name}-rewarm", work=here, data=data, services=services,
                                        meter=CpuMeter(), batch=args.batch, timeout_s=args.timeout)  # fmt: skip
                            meter.add("spark", spark_jvm_pid(spark))
                            for component, pid in services.pids.items():
                                meter.add(component, pid)
                            outcome = run_variant(
                                spark,
                                base,
                                _ONCEFLOW_VARIANT[system],
                                name,
                                work=here,
                                data=data,
                                services=services,
                                meter=meter,
                                batch=args.batch,
                                timeout_s=args.timeout,
                            )
                        if not system.startswith("flink"):
                            spark_used = time.monotonic()
                        results[broker_kind][system].append(outcome)
                        print(f"{name}: load {load_average()} {outcome}", flush=True)
    finally:
        if spark is not None:
            spark.stop()
    print(f"\nflink anchor: {args.events} events; load average at the end: {load_average()}")
    summary(results, args.events)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
