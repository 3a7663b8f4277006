"""Staging stores: a staging root on local disk against one on an S3 API store (S3Proxy), side by side.

Assumptions: one process on this machine; S3Proxy (``make setup``) runs as a child process on
127.0.0.1 with its filesystem backend on the same disk as the local root, so the difference is the
S3 protocol (HTTP, signing, multipart upload, the server's own writes), not the disk. Both roots go
through :class:`~onceflow.contract.staging.StagingStore`, exactly as a task, a participant and the
coordinator use them; local writes are fsynced (file and directory) as staging does.

For each file size (IP-count rows: a small micro-batch and a large one) and each store, every
repeat times the three operations of one staged file's life:

- ``write``: a task's ``StagingWriter.write_batches`` (encode, hash, publish);
- ``read``: a participant's ``read_staged`` (read, checksum, row count);
- ``gc``: the coordinator's ``delete_batch`` of the file's batch directory.

Medians in milliseconds, MB/s of the file bytes for write and read, and the ratio S3Proxy / local
measured in the same run.

Usage:
    .venv/bin/python bench/staging_stores.py [--repeats 30] [--small-rows 1000] [--large-rows 200000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from onceflow.contract.staging import S3Settings, StagingStore, StagingWriter, delete_batch, read_staged
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA
from onceflow.testing.s3 import CLIENT_CHECKSUM_ENV, S3ProxyProcess

OPERATIONS = ("write", "read", "gc")


def ip_count_batches(rows: int) -> list[pa.RecordBatch]:
    """``rows`` IP-count rows (1,000 IPs per 5-second window) in batches of 10,000, as Spark hands them over."""
    index = pa.array(range(rows), pa.int64())
    window = pc.add(pc.multiply(pc.divide(index, 1000), 5000), 1_700_000_000_000)
    ip = pc.binary_join_element_wise("10.0.0.", pc.cast(pc.bit_wise_and(index, 255), pa.string()), "")
    count = pc.add(pc.bit_wise_and(index, 63), 1)
    table = pa.Table.from_arrays([window, pc.add(window, 5000), ip, count], schema=IP_COUNT_ARROW_SCHEMA)
    batches: list[pa.RecordBatch] = table.to_batches(max_chunksize=10_000)
    return batches


def one_file(root: str, store: StagingStore, batch: int, batches: list[pa.RecordBatch]) -> tuple[dict[str, float], int]:
    """Seconds of write, read and gc of one staged file in batch ``batch`` under ``root``; its size."""
    times: dict[str, float] = {}
    began = time.perf_counter()
    staged = StagingWriter(root, "bench", batch, store=store).write_batches("part-0", batches[0].schema, batches)
    times["write"] = time.perf_counter() - began
    began = time.perf_counter()
    size = read_staged(staged, store=store).nbytes
    times["read"] = time.perf_counter() - began
    began = time.perf_counter()
    assert delete_batch(root, "bench", batch, store=store)
    times["gc"] = time.perf_counter() - began
    return times, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--small-rows", type=int, default=1_000)
    parser.add_argument("--large-rows", type=int, default=200_000)
    args = parser.parse_args()
    os.environ.update(CLIENT_CHECKSUM_ENV)  # S3Proxy 2.6 does not speak the SDK's trailing checksums
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        proxy = S3ProxyProcess(Path(tmp) / "s3proxy")
        began = time.perf_counter()
        proxy.start()
        print(f"S3Proxy ready in {time.perf_counter() - began:.2f}s at {proxy.endpoint_url}")
        try:
            roots = {
                "local": (str(Path(tmp) / "staging"), StagingStore(environ={})),
                "s3proxy": (proxy.uri("staging"), StagingStore(S3Settings.model_validate(proxy.s3_settings()))),
            }
            print(f"repeats: {args.repeats}; medians in ms; MB/s of the Arrow data; x = s3proxy / local (same run)")
            print(
                f"{'rows':>8} {'store':>8} "
                + " ".join(f"{op + ' ms':>9}" for op in OPERATIONS)
                + "  write MB/s  read MB/s"
            )
            for rows in (args.small_rows, args.large_rows):
                batches = ip_count_batches(rows)
                medians: dict[str, dict[str, float]] = {}
                for store_name, (root, store) in roots.items():
                    one_file(root, store, 0, batches)  # warm-up: connections, directories
                    samples: dict[str, list[float]] = {op: [] for op in OPERATIONS}
                    size = 0
                    for repeat in range(args.repeats):
                        times, size = one_file(root, store, repeat + 1, batches)
                        for op in OPERATIONS:
                            samples[op].append(times[op])
                    medians[store_name] = {op: statistics.median(samples[op]) for op in OPERATIONS}
                    m = medians[store_name]
                    print(
                        f"{rows:>8,} {store_name:>8} "
                        + " ".join(f"{m[op] * 1000:>9.2f}" for op in OPERATIONS)
                        + f"  {size / m['write'] / 1e6:>10.1f} {size / m['read'] / 1e6:>10.1f}"
                    )
                ratios = " ".join(f"{medians['s3proxy'][op] / medians['local'][op]:>9.1f}" for op in OPERATIONS)
                print(f"{rows:>8,} {'x':>8} {ratios}")
        finally:
            proxy.stop()


if __name__ == "__main__":
    main()
