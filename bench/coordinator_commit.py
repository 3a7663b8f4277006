"""Coordinator two-phase-commit latency and throughput: one micro-batch of 1,000 rows per commit.

Assumptions: one machine (2 cores here); the :class:`TwoPhaseCommitEngine` in this process, driven
directly (no coordinator gRPC hop), one job, one writer committing batches back to back (as a Spark
driver does: the next batch starts after the previous commit returned). Each batch stages 4 files
of 250 rows; participants are fake sinks that vote yes at once and never read the files, so the
numbers are the coordinator's own cost: 2PC bookkeeping, the transaction log, participant calls.

- ``--log memory`` (default): in-memory transaction log (no durability).
- ``--log kafka``: the Kafka transaction log on an embedded broker child process on loopback
  (``--fsync interval``); each commit is three log writes (PREPARING, COMMITTING, COMMITTED), each
  one Kafka transaction.
- ``--participants inprocess`` (default): fake sinks called directly. ``grpc``: the same fake sinks
  behind a real gRPC participant server in this process (adds the participant RPCs over loopback).

Latency is CommitTransaction from call to return (after every participant acked); throughput is
batches committed per second back to back. ``bench/twopc_sinks.py`` measures the same with the three real sinks.

Usage:
    .venv/bin/python bench/coordinator_commit.py [--batches 2000] [--sinks 3] [--log memory|kafka]
        [--participants inprocess|grpc]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from samples import percentile

from onceflow.contract import ParticipantRef, TransactionState
from onceflow.coordinator.engine import EngineConfig, TwoPhaseCommitEngine
from onceflow.coordinator.log import MemoryTransactionLog, TransactionLog
from onceflow.coordinator.log.kafka import KafkaTransactionLog
from onceflow.coordinator.participants import GrpcParticipantConnector, ParticipantConnector
from onceflow.core.settings import KafkaSettings
from onceflow.testing.coordinator import FakeParticipants, FakeParticipantServer, staged_files

JOB = "bench"
SINK_NAMES = ["kafka", "sqlite", "postgres", "sink3", "sink4", "sink5"]


def run(
    log: TransactionLog, connector: ParticipantConnector, refs: list[ParticipantRef], batches: int, warmup: int
) -> tuple[list[float], float]:
    engine = TwoPhaseCommitEngine(log, connector, EngineConfig(prepare_timeout=10, commit_wait=10))
    engine.start()
    try:
        epoch = engine.register_writer(JOB, "bench").epoch
        engine.register_participants(JOB, epoch, refs)
        files = [staged_files(JOB, batch, files=4, rows=250) for batch in range(warmup + batches)]
        for batch in range(warmup):
            engine.commit_transaction(JOB, epoch, batch, files[batch])
        latencies: list[float] = []
        started = time.perf_counter()
        for batch in range(warmup, warmup + batches):
            t0 = time.perf_counter()
            outcome = engine.commit_transaction(JOB, epoch, batch, files[batch])
            latencies.append(time.perf_counter() - t0)
            if outcome.state is not TransactionState.COMMITTED:
                raise RuntimeError(f"batch {batch}: {outcome}")
        elapsed = time.perf_counter() - started
        return latencies, elapsed
    finally:
        engine.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=2000, help="measured commits")
    parser.add_argument("--warmup", type=int, default=100, help="unmeasured commits first")
    parser.add_argument("--sinks", type=int, default=3, choices=range(1, len(SINK_NAMES) + 1))
    parser.add_argument("--log", choices=["memory", "kafka"], default="memory")
    parser.add_argument("--participants", choices=["inprocess", "grpc"], default="inprocess")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # per-transaction INFO lines would dominate

    names = SINK_NAMES[: args.sinks]
    with ExitStack() as stack:
        log: TransactionLog = MemoryTransactionLog()
        if args.log == "kafka":
            from onceflow.broker.embedded import EmbeddedBroker

            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-coordinator-")))
            broker = stack.enter_context(EmbeddedBroker(data_dir, fsync="interval"))
            log = KafkaTransactionLog(KafkaSettings(bootstrap_servers=broker.bootstrap_servers), init_if_missing=True)
        connector: ParticipantConnector
        if args.participants == "grpc":
            server = FakeParticipantServer(names).start()
            stack.callback(server.stop)
            connector, refs = GrpcParticipantConnector(), server.refs
        else:
            fakes = FakeParticipants(names)
            connector, refs = fakes, fakes.refs
        latencies, elapsed = run(log, connector, refs, args.batches, args.warmup)

    ms = [x * 1000 for x in latencies]
    print(
        f"coordinator commit: {args.batches} batches x 1000 rows (4 files), {args.sinks} sinks, "
        f"log={args.log}, participants={args.participants}"
    )
    print(
        f"  latency ms: p50 {percentile(ms, 0.50):.3f}  p99 {percentile(ms, 0.99):.3f}  "
        f"mean {statistics.fmean(ms):.3f}  max {max(ms):.3f}"
    )
    print(f"  throughput: {args.batches / elapsed:,.0f} commits/s back to back ({elapsed:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
