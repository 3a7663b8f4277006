"""Embedded broker throughput: produce and fetch, medians over several runs.

Assumptions: one machine (2 cores here), the broker as a child process on loopback with
``--fsync interval``, confluent-kafka in this process as the client. Produce: 100-byte values,
idempotent producer, linger.ms=5, a topic of 3 partitions. Fetch: one consumer reading the topic
from the beginning. Both sides share the CPU, so the numbers are end-to-end, client included. The consumer
raises librdkafka's prefetch queue limits, as a throughput-tuned consumer would.

Usage:
    .venv/bin/python bench/broker_throughput.py [--messages 500000] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from kafka_load import drain, produce_idempotent

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.clients import create_topic

PARTITIONS = 3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    value = b"x" * 100
    produce_rates: list[float] = []
    fetch_rates: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker(Path(tmp), fsync="interval") as broker:
        for run in range(args.runs):
            topic = f"bench-{run}"
            create_topic(broker.bootstrap_servers, topic, partitions=PARTITIONS)
            produce_rates.append(produce_idempotent(broker.bootstrap_servers, topic, args.messages, value))
            fetch_rates.append(drain(broker.bootstrap_servers, topic, PARTITIONS, args.messages))
            rates = f"produce {produce_rates[-1]:,.0f} msgs/s, fetch {fetch_rates[-1]:,.0f} msgs/s"
            print(f"run {run + 1}/{args.runs}: {rates}", flush=True)
    print(f"produce median: {statistics.median(produce_rates):,.0f} msgs/s (target >= 200,000)")
    print(f"fetch median:   {statistics.median(fetch_rates):,.0f} msgs/s (target >= 400,000)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
