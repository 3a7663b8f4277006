"""Generator -> broker throughput: exactly-once source transactions vs the idempotent-only producer.

What runs: one ``access-log-generator`` task on the connect runtime's data plane (``Worker``), writing
AccessEvents (Avro single-object encoding, key = ip, header ``seq``) to a fresh 3-partition topic.

- ``exactly-once``: ``ExactlyOnceWorkerSourceTask``, a transactional producer committing records and
  the task's offset every ``--commit-interval-ms`` (default 100 ms, ``transaction.boundary=interval``);
- ``idempotent``: ``WorkerSourceTask``, an idempotent producer, offsets flushed every 5 s (at least once).

Time: from the task reporting RUNNING (producer initialized, offsets read) until it has handed over
every event and stopped gracefully (last transaction committed, or producer flushed). So the numbers
are end-to-end and acknowledged, with event creation, encoding and produce() in this process.

Assumptions: one machine (2 cores here) shared by the broker (a child process on loopback,
``--fsync interval``) and this process; one task (one Python thread produces); librdkafka defaults of
the runtime (linger.ms=5, large batches). Medians over ``--runs`` runs, both modes side by side.

Usage:
    .venv/bin/python bench/connect_generator.py [--events 300000] [--runs 3] [--commit-interval-ms 100]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core import topics
from onceflow.runtime.plugins import PluginRegistry
from onceflow.runtime.status import TaskId, TaskStatus, WorkState
from onceflow.runtime.storage import KafkaOffsetBackingStore
from onceflow.runtime.worker import Worker, WorkerConfig
from onceflow.runtime.worker.source_task import AbstractWorkerSourceTask
from onceflow.testing.broker.clients import create_topic


def run_once(bootstrap: str, events: int, exactly_once: bool, interval_ms: int, batch: int) -> float:
    """Events per second of one run."""
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 3, {"retention.ms": "-1"})
    client = {"bootstrap.servers": bootstrap}
    offsets = KafkaOffsetBackingStore(client, topics.CONNECT_OFFSETS_TOPIC)
    offsets.start()
    running = threading.Event()
    started_at: list[float] = []

    def listener(status: TaskStatus) -> None:
        if status.state is WorkState.RUNNING and not running.is_set():
            started_at.append(time.perf_counter())
            running.set()

    worker = Worker(
        WorkerConfig("bench", client, topics.CONNECT_OFFSETS_TOPIC, exactly_once_source=exactly_once),
        PluginRegistry.discover(),
        offsets,
        listener,
    )
    name = f"gen-{topic}"
    config = {
        "name": name,
        "connector.class": "access-log-generator",
        "topic": topic,
        "count": str(events),
        "batch.size": str(batch),
        "transaction.boundary": "interval",
        "transaction.boundary.interval.ms": str(interval_ms),
    }
    task = worker.start_task(TaskId(name, 0), config, {**config, "task.index": "0", "task.count": "1"})
    if not running.wait(60):
        raise RuntimeError(f"task did not start: {task.status().trace}")
    assert isinstance(task, AbstractWorkerSourceTask)
    while task.records_sent < events:
        if task.state is WorkState.FAILED:
            raise RuntimeError(task.status().trace)
        time.sleep(0.005)
    worker.stop_tasks([task.id], timeout=120)  # graceful: commit the last transaction / flush
    elapsed = time.perf_counter() - started_at[0]
    if task.state is WorkState.FAILED:
        raise RuntimeError(task.status().trace)
    return events / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--commit-interval-ms", type=int, default=100)
    parser.add_argument("--batch", type=int, default=5000, help="generator batch.size (events per poll)")
    parser.add_argument("--bootstrap", help="use this broker instead of starting an embedded one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        broker = None if args.bootstrap else EmbeddedBroker(Path(tmp) / "broker", 0).start()
        bootstrap = args.bootstrap or (broker.bootstrap_servers if broker else "")
        try:
            results: dict[str, list[float]] = {"exactly-once": [], "idempotent": []}
            for run in range(args.runs):
                for mode, rates in results.items():
                    rate = run_once(bootstrap, args.events, mode == "exactly-once", args.commit_interval_ms, args.batch)
                    rates.append(rate)
                    print(f"run {run + 1} {mode:>12}: {rate:>10,.0f} events/s", file=sys.stderr)
        finally:
            if broker is not None:
                broker.stop()
    eos = statistics.median(results["exactly-once"])
    idem = statistics.median(results["idempotent"])
    print(f"generator -> broker, {args.events:,} events, {args.runs} runs (medians)")
    print(f"{'mode':<40} {'events/s':>12}")
    label = f"exactly-once (commit every {args.commit_interval_ms} ms)"
    print(f"{label:<40} {eos:>12,.0f}")
    print(f"{'idempotent only (at least once)':<40} {idem:>12,.0f}")
    print(f"ratio exactly-once / idempotent: {eos / idem:.2f}")
    print(f"target >= 100,000 events/s with exactly-once: {'met' if eos >= 100_000 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
