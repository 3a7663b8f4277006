"""Embedded broker transactions: transactional vs idempotent produce, EndTxn latency, and
read_committed vs read_uncommitted fetch; medians over several runs, measured side by side.

Assumptions: one machine (2 cores here), the broker as a child process on loopback with
``--fsync interval``, confluent-kafka in this process as the client (both share the CPU, so numbers
are end-to-end, client included). Produce: 100-byte values, linger.ms=5, a topic of 3 partitions,
records spread round-robin by the client's default partitioner (no key). Every run measures each
variant once, in the same order, on fresh topics:

- idempotent produce (no transactions), the baseline (after one warm-up record, so that connecting
  and InitProducerId are outside the timing, as ``init_transactions`` is for the others);
- transactional produce committing every 100 ms of wall time (``commit_transaction`` flushes, so
  the producer stalls for each EndTxn round trip);
- transactional produce committing every 10,000 records;
- EndTxn latency: back-to-back transactions of 3 records (one per partition), timing
  ``commit_transaction()`` alone (it waits for the 3 records' acks, then EndTxn and its 3 markers);
- fetch of the commit-every-10k topic (data plus control batches) with isolation.level
  read_committed and read_uncommitted, by one consumer each.

Usage:
    .venv/bin/python bench/broker_transactions.py [--messages 500000] [--runs 5] [--txns 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from kafka_load import commit_latencies, drain, produce_idempotent, produce_transactional
from samples import percentile

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.clients import create_topic

PARTITIONS = 3
VALUE = b"x" * 100


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=500_000, help="records per produce/fetch variant")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--txns", type=int, default=300, help="transactions timed per run for EndTxn latency")
    args = parser.parse_args()
    rates: dict[str, list[float]] = {
        name: [] for name in ("idempotent", "txn/100ms", "txn/10k", "read_committed", "read_uncommitted")
    }
    p50s: list[float] = []
    p99s: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker(Path(tmp), fsync="interval") as broker:
        bootstrap = broker.bootstrap_servers
        for run in range(args.runs):
            topics = {name: f"{name.replace('/', '-')}-{run}" for name in ("idempotent", "txn/100ms", "txn/10k", "lat")}
            for topic in topics.values():
                create_topic(bootstrap, topic, partitions=PARTITIONS)
            rates["idempotent"].append(produce_idempotent(bootstrap, topics["idempotent"], args.messages, VALUE))
            rates["txn/100ms"].append(
                produce_transactional(bootstrap, topics["txn/100ms"], args.messages, VALUE, lambda _n, age: age >= 0.1)
            )
            rates["txn/10k"].append(
                produce_transactional(bootstrap, topics["txn/10k"], args.messages, VALUE, lambda n, _age: n >= 10_000)
            )
            latencies = commit_latencies(bootstrap, topics["lat"], args.txns, PARTITIONS, VALUE)
            p50s.append(percentile(latencies, 0.50))
            p99s.append(percentile(latencies, 0.99))
            for isolation in ("read_committed", "read_uncommitted"):
                rates[isolation].append(drain(bootstrap, topics["txn/10k"], PARTITIONS, args.messages, isolation))
            line = ", ".join(f"{name} {values[-1]:,.0f}" for name, values in rates.items())
            print(f"run {run + 1}/{args.runs} (msgs/s): {line}; EndTxn p50 {p50s[-1] * 1000:.2f} ms", flush=True)
    median = {name: statistics.median(values) for name, values in rates.items()}
    base = median["idempotent"]
    print(f"idempotent produce:              {base:,.0f} msgs/s")
    print(f"transactional, commit per 100ms: {median['txn/100ms']:,.0f} msgs/s ({median['txn/100ms'] / base:.2f}x)")
    print(f"transactional, commit per 10k:   {median['txn/10k']:,.0f} msgs/s ({median['txn/10k'] / base:.2f}x)")
    print(
        f"EndTxn latency (3 partitions):   p50 {statistics.median(p50s) * 1000:.2f} ms, "
        f"p99 {statistics.median(p99s) * 1000:.2f} ms (median over runs, {args.txns} txns each)"
    )
    committed, uncommitted = median["read_committed"], median["read_uncommitted"]
    print(f"fetch read_committed:            {committed:,.0f} msgs/s")
    print(
        f"fetch read_uncommitted:          {uncommitted:,.0f} msgs/s (read_committed = {committed / uncommitted:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
