"""Staging formats: what one Spark task pays to stage its output, and a participant to read it back.

Assumptions: one process, a local filesystem (tmpfs when /dev/shm exists, so the disk does not
dominate), the bytes fsynced as the staging writer does. A task's output arrives as Arrow record
batches (what Spark's Arrow writer API hands over); each format starts from those batches:

- ``avro-rows``: the previous staging path: every row turned into a Python dict, then a fastavro
  container file (the reader decodes every record back into a dict);
- ``arrow-ipc``: the batches written as they are into an Arrow IPC file (``StagingWriter.write_batches``;
  the schema is in the file), read back with ``read_staged`` (checksum + footer + zero-copy batches);
- ``parquet``: the batches written with pyarrow's Parquet writer (snappy), read back with ``read_table``.

Two outputs: the IP-count rows (4 columns) and a wide row (12 columns: strings, ints, double,
decimal, boolean, binary, date, timestamps, nulls). Each format writes and reads ``--rows`` rows
``--repeats`` times; medians of rows/s and MB/s (file bytes) are reported, with the ratio to
``avro-rows`` measured in the same run.

Usage:
    .venv/bin/python bench/staging_formats.py [--rows 200000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import hashlib
import io
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from onceflow.contract.staging import StagingWriter, read_staged
from onceflow.core.avro import IP_COUNT_SCHEMA
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA

WIDE = pa.schema(
    [
        pa.field("event_time", pa.timestamp("us", tz="UTC")),
        pa.field("ip", pa.string()),
        pa.field("method", pa.string()),
        pa.field("path", pa.string()),
        pa.field("status", pa.int32()),
        pa.field("bytes", pa.int64()),
        pa.field("latency", pa.float64()),
        pa.field("price", pa.decimal128(12, 3)),
        pa.field("from_bot", pa.bool_()),
        pa.field("digest", pa.binary()),
        pa.field("day", pa.date32()),
        pa.field("note", pa.string()),
    ]
)
WIDE_AVRO = fastavro.parse_schema(
    {
        "type": "record",
        "name": "Wide",
        "fields": [
            {"name": "event_time", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "ip", "type": "string"},
            {"name": "method", "type": "string"},
            {"name": "path", "type": "string"},
            {"name": "status", "type": "int"},
            {"name": "bytes", "type": "long"},
            {"name": "latency", "type": "double"},
            {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}},
            {"name": "from_bot", "type": "boolean"},
            {"name": "digest", "type": "bytes"},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "note", "type": ["null", "string"]},
        ],
    }
)


def ip_count_batches(rows: int) -> list[pa.RecordBatch]:
    table = pa.table(
        {
            "window_start": pa.array([1_700_000_000_000 + (i // 1000) * 5000 for i in range(rows)], pa.int64()),
            "window_end": pa.array([1_700_000_005_000 + (i // 1000) * 5000 for i in range(rows)], pa.int64()),
            "ip": pa.array([f"10.{i % 256}.{(i // 256) % 256}.{i % 7}" for i in range(rows)], pa.string()),
            "count": pa.array([i % 97 + 1 for i in range(rows)], pa.int64()),
        },
        schema=IP_COUNT_ARROW_SCHEMA,
    )
    batches: list[pa.RecordBatch] = table.to_batches(max_chunksize=10_000)
    return batches


def wide_batches(rows: int) -> list[pa.RecordBatch]:
    start = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)
    table = pa.table(
        {
            "event_time": [start + dt.timedelta(microseconds=i * 1000) for i in range(rows)],
            "ip": [f"10.{i % 256}.{(i // 256) % 256}.{i % 7}" for i in range(rows)],
            "method": ["GET" if i % 5 else "POST" for i in range(rows)],
            "path": [f"/api/v1/items/{i % 500}" for i in range(rows)],
            "status": [(200, 404, 500, 503)[i % 4] for i in range(rows)],
            "bytes": [i * 13 % 100_000 for i in range(rows)],
            "latency": [i / 7 for i in range(rows)],
            "price": [decimal.Decimal(i % 100_000) / 1000 for i in range(rows)],
            "from_bot": [i % 11 == 0 for i in range(rows)],
            "digest": [hashlib.md5(str(i).encode()).digest() for i in range(rows)],
            "day": [dt.date(2026, 11, 24)] * rows,
            "note": [None if i % 3 else "retry" for i in range(rows)],
        },
        schema=WIDE,
    )
    batches: list[pa.RecordBatch] = table.to_batches(max_chunksize=10_000)
    return batches


def _fsync_write(path: Path, data: bytes) -> None:
    with path.open("wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def avro_rows(batches: list[pa.RecordBatch], schema: Any, path: Path) -> tuple[int, Callable[[], int]]:
    rows: list[dict[str, Any]] = []
    for batch in batches:  # the old path: a Python dict per row
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        names = batch.schema.names
        rows.extend(dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True))
    buffer = io.BytesIO()
    fastavro.writer(buffer, schema, rows)
    data = buffer.getvalue()
    hashlib.sha256(data).hexdigest()
    _fsync_write(path, data)

    def read() -> int:
        blob = path.read_bytes()
        hashlib.sha256(blob).hexdigest()
        return sum(1 for _ in fastavro.reader(io.BytesIO(blob)))

    return len(data), read


def arrow_ipc(batches: list[pa.RecordBatch], root: Path) -> tuple[int, Callable[[], int]]:
    staged = StagingWriter(str(root), "bench", 0).write_batches("part-0", batches[0].schema, batches)
    size = Path(staged.uri.removeprefix("file://")).stat().st_size
    return size, lambda: read_staged(staged).num_rows


def parquet(batches: list[pa.RecordBatch], path: Path) -> tuple[int, Callable[[], int]]:
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_batches(batches), sink, compression="snappy")
    data = sink.getvalue().to_pybytes()
    hashlib.sha256(data).hexdigest()
    _fsync_write(path, data)

    def read() -> int:
        blob = path.read_bytes()
        hashlib.sha256(blob).hexdigest()
        return int(pq.read_table(pa.py_buffer(blob)).num_rows)

    return len(data), read


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    print(f"rows per file: {args.rows:,}; repeats: {args.repeats}; medians; ratio = x / avro-rows (same run)")
    for output, batches, avro_schema in (
        ("ip-count", ip_count_batches(args.rows), fastavro.parse_schema(dict(IP_COUNT_SCHEMA))),
        ("wide", wide_batches(args.rows), WIDE_AVRO),
    ):
        results: dict[str, dict[str, list[float]]] = {}
        for _ in range(args.repeats):
            for name in ("avro-rows", "arrow-ipc", "parquet"):
                with tempfile.TemporaryDirectory(dir=base) as tmp:
                    root = Path(tmp)
                    began = time.perf_counter()
                    if name == "avro-rows":
                        size, read = avro_rows(batches, avro_schema, root / "part-0.avro")
                    elif name == "arrow-ipc":
                        size, read = arrow_ipc(batches, root)
                    else:
                        size, read = parquet(batches, root / "part-0.parquet")
                    wrote = time.perf_counter() - began
                    began = time.perf_counter()
                    assert read() == args.rows
                    read_s = time.perf_counter() - began
                entry = results.setdefault(name, {"write": [], "read": [], "size": []})
                entry["write"].append(wrote)
                entry["read"].append(read_s)
                entry["size"].append(size)
        base_write = statistics.median(results["avro-rows"]["write"])
        base_read = statistics.median(results["avro-rows"]["read"])
        print(f"\n{output}:")
        header = ("format", "write rows/s", "write MB/s", "x avro", "read rows/s", "x avro", "bytes/row")
        print("  {:<10} {:>14} {:>11} {:>7} {:>13} {:>7} {:>10}".format(*header))
        for name, entry in results.items():
            write = statistics.median(entry["write"])
            read_s = statistics.median(entry["read"])
            mid_size = statistics.median(entry["size"])
            print(
                f"  {name:<10} {args.rows / write:>14,.0f} {mid_size / write / 1e6:>11.1f} {base_write / write:>7.1f}"
                f" {args.rows / read_s:>13,.0f} {base_read / read_s:>7.1f} {mid_size / args.rows:>10.1f}"
            )


if __name__ == "__main__":
    main()
