"""One onceflow IP-count run over a preloaded input, timed to the last result committed in every sink.

Variants (the same job, the same input, each run writing outputs of its own):

- ``exactly-once``: 2PC through the coordinator to a topic, a SQLite table and a PostgreSQL table, the
  driver staging each batch's rows (``stage_on = "driver"``: an aggregate's results are small);
- ``exactly-once-kafka``: the same, 2PC to a topic only (the baseline's single output: the guarantee's cost);
- ``exactly-once-tasks``: as ``exactly-once``, the write tasks staging the rows (``stage_on = "tasks"``,
  the default: any output size);
- ``at-least-once``: the baseline, ``foreachBatch`` and a plain producer to a topic, no 2PC.

Measures of a run:

- **to the last result**: events / (the moment the last output held every count - the moment the first
  record was read). The first read is the first micro-batch's trigger start plus its phases before
  any task runs (``latestOffset``, ``getBatch``, ``queryPlanning``, ``walCommit``); the end needs the
  end-of-input markers (the job closes its last windows) and the no-data batch that emits them;
- **from submission**: the same end, from the call that starts the query (its planning included);
- **steady state** (labelled as such, the old measure): input rows / trigger time of every batch with
  input after the first;
- **CPU µs per event** of every process involved, over the same span (submission to last result).
"""

from __future__ import annotations

import statistics
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from cpu_meter import CpuMeter
from ip_count_rig import Preloaded, ResultWatcher, RunOutputs, SinkServices

from onceflow.ipcount.schema import ENTRYPOINT, IP_COUNT_RECORD_NAME, results_outputs
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.runner import start_query
from onceflow.testing.broker.clients import create_topic

VARIANTS = ("exactly-once", "exactly-once-kafka", "exactly-once-tasks", "at-least-once")
#: The A/A control, asked for by name (``--variants ...,at-least-once-control``): the at-least-once run
#: again, so the paired ratios of two identical runs show how far this machine alone moves a pair.
CONTROL = "at-least-once-control"
#: A Python worker starting on a loaded machine may take longer than Spark's 15 s to connect back.
BENCH_SPARK_CONF = {"spark.python.authenticate.socketTimeout": "180s"}
_BEFORE_TASKS = ("latestOffset", "getBatch", "queryPlanning", "walCommit")


def base_settings(bootstrap: str, work: Path, services: SinkServices, master: str) -> dict[str, Any]:
    """What every run of one rig shares: the broker, the staging under ``work``, the sink services, Spark."""
    return {
        "kafka": {"bootstrap_servers": bootstrap},
        "staging_root": str(work / "system" / "staging"),
        "coordinator": {"target": services.coordinator},
        "participants": services.participants,
        "spark": {"master": master, "shuffle_partitions": 2, "conf": BENCH_SPARK_CONF},
        "log": {"level": "WARNING"},
    }


def job_settings(base: dict[str, Any], guarantee: str, work: Path, name: str, **overrides: Any) -> SparkJobSettings:
    """The IP-count job's settings: ``base`` and ``overrides``, by default its results in every participant."""
    example: dict[str, Any] = {"entrypoint": ENTRYPOINT}
    if guarantee == "at-least-once":  # IpCount records keyed by ip, as the Kafka binding of the results writes
        example.update(sink_keys=["ip"], sink_record_name=IP_COUNT_RECORD_NAME)
    else:
        sinks = [p["sink"] for p in overrides.get("participants", base.get("participants", []))]
        example["outputs"] = results_outputs([s for s in sinks if s != "kafka"], [s for s in sinks if s == "kafka"])
    return SparkJobSettings.model_validate(
        {
            **example,
            **base,
            "job": name,
            "guarantee": guarantee,
            "checkpoint_location": str(work / "checkpoints" / name),
            "spark": {**base["spark"], "query_name": name},
            **overrides,
        }
    )


def spark_jvm_pid(spark: Any) -> int | None:
    """The driver JVM (local mode: the executors too; its Python workers are its children)."""
    process = getattr(spark.sparkContext._gateway, "proc", None)  # the only handle on it
    return int(process.pid) if process is not None else None


def first_read_time(progress: dict[str, Any]) -> float:
    """When the first micro-batch's tasks started reading: trigger start + the phases before them."""
    started = datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()
    before_tasks: int = sum(int(progress["durationMs"].get(phase, 0)) for phase in _BEFORE_TASKS)
    return started + before_tasks / 1000


def in_turn(systems: list[str], repeat: int) -> list[str]:
    """``systems`` rotated by ``repeat``: across the repeats, no system always runs first, or always
    right after the same other one (a run pays for what the one before it left: load, reaped Python
    workers, a cold JIT)."""
    shift = repeat % len(systems) if systems else 0
    return systems[shift:] + systems[:shift]


#: Spark kills a Python worker that has been idle for a minute (``PythonWorkerFactory``'s
#: ``IDLE_WORKER_TIMEOUT_NS``, not configurable), checking every 10 s: a session idle longer than this
#: (while another system's run takes over a minute) starts its workers again in its next run's first
#: batch, 5 to 7 s on this machine. A bench warms it again first (:func:`warm_up`).
PYTHON_WORKERS_REAPED_AFTER_S = 50.0


def warm_up(spark: Any, base: dict[str, Any], name: str, **kwargs: Any) -> None:
    """Untimed exactly-once runs before the timed ones, one per staging (the tasks', whose Python
    writer a driver-staged run never starts, and the driver's): the Spark JVM's JIT and its Python
    workers warm, as in a streaming job that has been running for a while (again after the session
    idled :data:`PYTHON_WORKERS_REAPED_AFTER_S`). Their outcomes are printed, not counted."""
    for variant in ("exactly-once-tasks", "exactly-once"):
        started = time.monotonic()
        outcome = run_variant(spark, base, variant, f"{name}-{variant}", **kwargs)
        print(
            f"{name}-{variant}: warm-up, not counted: {time.monotonic() - started:.1f}s,"
            f" first batch {outcome['first_batch_s']}s"
        )


def run_variant(
    spark: Any,
    base: dict[str, Any],
    variant: str,
    name: str,
    *,
    work: Path,
    data: Preloaded,
    services: SinkServices,
    meter: CpuMeter,
    batch: int,
    trigger_ms: int = 100,
    timeout_s: float = 1800,
) -> dict[str, Any]:
    """Run ``variant`` over ``data`` into outputs named ``name``; the result is checked against the truth."""
    bootstrap = base["kafka"]["bootstrap_servers"]
    table = name.replace("-", "_")
    create_topic(bootstrap, table, partitions=1)
    overrides: dict[str, Any] = {
        "trigger_interval_ms": trigger_ms,
        "source": {"topic": data.topic, "max_offsets_per_trigger": batch},
    }
    outputs = RunOutputs(topic=table)
    if variant in ("at-least-once", CONTROL):
        guarantee = "at-least-once"
        overrides["sink_topic"] = table
        overrides["participants"] = services.participants
    else:
        guarantee = "exactly-once"
        overrides["stage_on"] = "tasks" if variant == "exactly-once-tasks" else "driver"
        sinks = ["kafka"] if variant == "exactly-once-kafka" else [p["sink"] for p in services.participants]
        overrides["participants"] = [p for p in services.participants if p["sink"] in sinks]
        bindings: list[dict[str, Any]] = [{"sink": "kafka", "topic": table}]
        for sink in sinks:
            if sink in ("sqlite", "postgres"):
                bindings.append({"sink": sink, "table": table, "keys": ["window_start", "ip"]})
        overrides["outputs"] = {"results": bindings}
        if "sqlite" in sinks and services.sqlite_path is not None:
            outputs.sqlite = (services.sqlite_path, table)
        if "postgres" in sinks and services.postgres_dsn is not None:
            outputs.postgres = (services.postgres_dsn, table)
    settings = job_settings(base, guarantee, work, name, **overrides)
    watcher = ResultWatcher(bootstrap, outputs, data.events)
    meter.start()
    submitted = time.time()
    query = start_query(spark, settings)
    try:
        done = watcher.wait(timeout_s, query.exception)
        cpu = meter.stop()
        progress = [dict(p) for p in query.recentProgress]
    finally:
        query.stop()
        watcher.close()
    watcher.verify(data.truth)
    with_input = [p for p in progress if p["numInputRows"] > 0]
    steady = with_input[1:]
    steady_rows = sum(p["numInputRows"] for p in steady)
    steady_s = sum(p["durationMs"]["triggerExecution"] for p in steady) / 1000
    first_read = first_read_time(progress[0])
    return {
        "to_last_result": data.events / (done - first_read),
        "from_submission": data.events / (done - submitted),
        "seconds": done - first_read,
        "steady": steady_rows / steady_s if steady_s else float("nan"),
        "first_batch_s": progress[0]["durationMs"]["triggerExecution"] / 1000,
        "batch_s": statistics.median(p["durationMs"]["triggerExecution"] / 1000 for p in steady) if steady else 0.0,
        "batches": len(progress),
        "cpu": cpu,
    }
