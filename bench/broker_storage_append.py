"""Micro-benchmark of the broker's partition log: append and read-back throughput.

Assumptions:
- one partition, default LogConfig except ``--segment-mb`` (fsync="interval": the OS page cache
  absorbs writes, as in the broker's default mode; pass ``--fsync-always`` to fsync every append);
- batches are built once up front with ``build_batch`` (uncompressed, ~16 KB of 100-byte values),
  so the timing covers only ``PartitionLog.append``/``read``: header parse, CRC32C check, offset
  rewrite, ``os.writev``, index upkeep, and for reads index lookup plus ``os.pread``;
- reads fetch sequentially with ``--fetch-bytes`` per call, like a consumer keeping up;
- the data directory is a fresh temporary directory per run (tmpfs or disk, whatever TMPDIR is).

Prints the median messages/s over ``--runs`` runs for append and for read.

    .venv/bin/python bench/broker_storage_append.py --batches 5000 --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from onceflow.broker.storage import LogConfig, PartitionLog, SimpleRecord, build_batch, parse_header

NOW = 1_700_000_000_000


def make_batch(batch_bytes: int, record_bytes: int) -> tuple[bytes, int]:
    count = max(1, batch_bytes // (record_bytes + 10))
    records = [SimpleRecord(None, bytes([i % 251]) * record_bytes) for i in range(count)]
    return build_batch(records, timestamp_ms=NOW), count


def run_once(batch: bytes, count: int, batches: int, config: LogConfig, fetch_bytes: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        log = PartitionLog.open(Path(tmp) / "bench-0", "bench", 0, config, now_ms=NOW)
        start = time.perf_counter()
        for _ in range(batches):
            log.append(batch, now_ms=NOW)
        append_s = time.perf_counter() - start
        start = time.perf_counter()
        offset, read_msgs = 0, 0
        end = log.log_end_offset
        while offset < end:
            data = log.read(offset, fetch_bytes)
            position = 0
            while position < len(data):  # walk headers only, as the fetch path does
                header = parse_header(data, position)
                read_msgs += header.record_count
                offset = header.next_offset
                position += header.size
        read_s = time.perf_counter() - start
        assert read_msgs == count * batches
        log.close()
    return count * batches / append_s, read_msgs / read_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=5000, help="batches appended per run")
    parser.add_argument("--batch-bytes", type=int, default=16_384, help="approximate batch size")
    parser.add_argument("--record-bytes", type=int, default=100, help="value size of each record")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--fetch-bytes", type=int, default=1_048_576, help="max_bytes per read")
    parser.add_argument("--segment-mb", type=int, default=1024)
    parser.add_argument("--fsync-always", action="store_true")
    args = parser.parse_args()

    batch, count = make_batch(args.batch_bytes, args.record_bytes)
    config = LogConfig(segment_bytes=args.segment_mb << 20, fsync="always" if args.fsync_always else "interval")
    print(f"batch: {len(batch)} bytes, {count} records; {args.batches} batches per run, {args.runs} runs")
    results = [run_once(batch, count, args.batches, config, args.fetch_bytes) for _ in range(args.runs)]
    append_rates = [a for a, _ in results]
    read_rates = [r for _, r in results]
    print(
        f"append: median {statistics.median(append_rates):,.0f} msgs/s  (runs: {[f'{a:,.0f}' for a in append_rates]})"
    )
    print(f"read:   median {statistics.median(read_rates):,.0f} msgs/s  (runs: {[f'{r:,.0f}' for r in read_rates]})")


if __name__ == "__main__":
    main()
