"""Micro-benchmark of the Kafka sink's record building: one binding's rows to keyed Avro records.

What it measures: :meth:`onceflow.sinks.kafka.records.BindingRecords.produce` over one staged
table of ``--rows`` rows, the part of a Kafka participant's prepare that runs per row in Python:
turning the rows into values, encoding each as Avro single-object, building its key, and handing it
to librdkafka's queue. Nothing is sent: the producer points at a closed port and only queues.

Assumptions:
- two shapes of output: ``epoch-ms`` is the IP-count example's (window bounds as epoch-millisecond
  ``long``\\ s, ``ip``, ``count``); ``timestamps`` is the same with the window bounds as Spark's
  ``window()`` gives them, UTC timestamps, the shape of most users' windowed outputs;
- the binding is keyed by ``ip``, in upsert mode, without header columns;
- single thread, CPython; the median over ``--runs`` runs, each timed once after one warm-up call.

To compare two commits, run the same command with each one's sources first on ``PYTHONPATH``
(see "The Kafka sink's records" in docs/benchmarks.md).

    .venv/bin/python bench/kafka_records.py --rows 1000 --runs 200
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import time

import pyarrow as pa
from confluent_kafka import Producer

from onceflow.contract import SinkBinding, SinkMode
from onceflow.sinks.base import BoundRows
from onceflow.sinks.kafka.records import BindingRecords

START = dt.datetime(2026, 11, 26, tzinfo=dt.UTC)


def table(rows: int, shape: str) -> pa.Table:
    """``rows`` rows of one window's counts: ``shape`` ``epoch-ms`` or ``timestamps`` (see the module docstring)."""
    start_ms = int(START.timestamp() * 1000)
    bounds = pa.array([start_ms] * rows, pa.int64()), pa.array([start_ms + 5000] * rows, pa.int64())
    if shape == "timestamps":
        bounds = tuple(b.cast(pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("us", tz="UTC")) for b in bounds)
    ips = pa.array([f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}" for i in range(rows)])
    return pa.table({"window_start": bounds[0], "window_end": bounds[1], "ip": ips, "count": pa.array(range(rows))})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args(argv)
    producer = Producer(
        {"bootstrap.servers": "127.0.0.1:9", "log_level": 0, "queue.buffering.max.messages": 10_000_000}
    )
    records = BindingRecords()
    print(f"BindingRecords.produce of {args.rows} rows, median of {args.runs} runs")
    for shape in ("epoch-ms", "timestamps"):
        rows = table(args.rows, shape)
        binding = SinkBinding(sink="kafka", output="counts", topic="counts", mode=SinkMode.UPSERT, keys=("ip",))
        bound = BoundRows(binding, rows)
        job = f"bench-{shape}"  # an encoder per (job, binding): one per shape
        records.produce(producer, job, bound, lambda _error, _message: None)
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            records.produce(producer, job, bound, lambda _error, _message: None)
            times.append(time.perf_counter() - started)
            producer.purge()
        median = statistics.median(times)
        print(f"  {shape:<10} {median * 1e3:7.2f} ms  ({median / args.rows * 1e6:.2f} µs/row)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
