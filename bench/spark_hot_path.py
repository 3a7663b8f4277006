"""Where an event's CPU goes on the Python side of the Spark job: fetch + Arrow, the hand-offs, the decode.

    .venv/bin/python bench/spark_hot_path.py [--events 200000] [--runs 5]

Assumptions: an embedded broker child process holds ``--events`` preloaded AccessEvents (2 partitions,
as ``bench/spark_job.py`` writes them). Everything else runs in this process, one thread, and is
measured in **CPU time of this process** (``time.process_time``) per event, which the machine's load
barely changes (wall time would); medians over ``--runs``. The wall time per event is printed next to
it: where it is far above the CPU time, the step waits (on the broker, or in the client).
``--source-option kafka.KEY=VALUE`` passes a client setting to the source, as a job's
``[kafka.properties]`` would (``kafka.fetch.queue.backoff.ms=1000``: librdkafka's default, before
``FETCH_DEFAULTS``). The steps are the job's own code, called as Spark's Python workers call it:

1. ``source: fetch + Arrow``: :func:`onceflow.spark.source.ranges.read_range` over each partition's
   whole range (confluent-kafka ``consume``, the checks, the Arrow record batches the source hands Spark);
2. ``hand-off`` (x2 per event in the job): one Arrow IPC stream write and read of the source's batches,
   the format in which Spark moves them between a Python worker and the JVM; the job moves the raw
   records Python -> JVM (the source) and JVM -> Python (the decoder's ``mapInArrow``), then the decoded
   columns back, each a serialisation on one side and a deserialisation on the other;
3. ``decode, per record``: the decoder before issue 25 (the AccessEvent serde on every record);
4. ``decode, column by column``: :func:`onceflow.spark.job.decode.decode_batch` now.

The JVM's part (the stateful window aggregation, shuffles, state store, Arrow conversion to rows) and
the commit are in ``bench/spark_job.py``'s CPU columns: the Spark JVM's CPU minus the Python workers'.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
from ip_count_rig import broker, preload

from onceflow.spark.job.decode import _decode_rows, decode_batch, decoded_schema
from onceflow.spark.job.end_of_input import END_OF_INPUT_COLUMN
from onceflow.spark.source.options import parse_source_options
from onceflow.spark.source.ranges import OffsetRange, read_range

FIELDS = ["event_time_ms", "ip"]


def per_event(step: Callable[[], object], events: int, runs: int) -> tuple[float, float]:
    """Median (CPU, wall) µs per event of ``step`` over ``runs``."""
    cpu, wall = [], []
    for _ in range(runs):
        started, clock = time.process_time(), time.monotonic()
        step()
        cpu.append((time.process_time() - started) / events * 1e6)
        wall.append((time.monotonic() - clock) / events * 1e6)
    return statistics.median(cpu), statistics.median(wall)


def ipc_round_trip(batches: list[pa.RecordBatch]) -> None:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    for _ in pa.ipc.open_stream(sink.getvalue()):
        pass


def per_record_decode(batches: list[pa.RecordBatch]) -> None:
    schema = decoded_schema(FIELDS)
    names = ["event_time", "ip"]
    for batch in batches:
        ends = np.asarray(batch.column(END_OF_INPUT_COLUMN), dtype=np.bool_)
        columns, _, _ = _decode_rows(batch, np.arange(batch.num_rows), FIELDS, names, ends)
        pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(columns, schema, strict=True)], schema=schema)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--source-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the onceflow-kafka source, e.g. kafka.fetch.queue.backoff.ms=1000",
    )
    args = parser.parse_args()
    extra = dict(option.split("=", 1) for option in args.source_option)
    work = Path(tempfile.mkdtemp(prefix="onceflow-bench-hot-"))
    with broker("embedded", work) as (bootstrap, _):
        data = preload(bootstrap, "hot_source", args.events, 100_000)
        options = parse_source_options({"kafka.bootstrap.servers": bootstrap, "subscribe": data.topic, **extra})
        tasks = [OffsetRange(data.topic, p, 0, end, data.end_offsets) for p, end in data.end_offsets.items()]
        batches: list[pa.RecordBatch] = []

        def fetch() -> None:
            batches.clear()
            for task in tasks:
                batches.extend(read_range(options, task))

        steps: dict[str, tuple[float, float]] = {"source: fetch + Arrow": per_event(fetch, args.events, args.runs)}
        assert sum(b.num_rows for b in batches) == args.events
        raw = [b.select(["key", "value", "topic", "partition", "offset", END_OF_INPUT_COLUMN]) for b in batches]
        steps["hand-off: Arrow IPC write + read of the raw records"] = per_event(
            lambda: ipc_round_trip(raw), args.events, args.runs
        )
        steps["decode, per record (before)"] = per_event(lambda: per_record_decode(raw), args.events, args.runs)
        steps["decode, column by column (now)"] = per_event(
            lambda: [decode_batch(b, FIELDS) for b in raw], args.events, args.runs
        )
        decoded = [decode_batch(b, FIELDS)[0] for b in raw]
        steps["hand-off: Arrow IPC write + read of the decoded columns"] = per_event(
            lambda: ipc_round_trip(decoded), args.events, args.runs
        )
    print(f"\nPython side per event, {args.events} events, median of {args.runs} runs (µs/event)")
    print(f"{'step':<58}{'CPU':>8}{'wall':>8}")
    for step, (cpu, wall) in steps.items():
        print(f"{step:<58}{cpu:>8.2f}{wall:>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
