"""Exactly-once consume-transform-produce under kill -9: confluent-kafka's transactional loop
(:mod:`onceflow.testing.broker.ctp_worker`) runs in a child process that is killed at random points
and restarted; the output, read with read_committed, equals the input exactly."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.testing.broker.clients import create_topic, produce_acked, read_topic

RECORDS = 100_000
PARTITIONS = 3
KILLS = 10


def _start_worker(bootstrap: str, log: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "onceflow.testing.broker.ctp_worker",
        "--bootstrap",
        bootstrap,
        "--input",
        "ctp-in",
        "--output",
        "ctp-out",
        "--group",
        "ctp",
        "--transactional-id",
        "ctp-worker",
        "--batch",
        "20",
    ]
    with log.open("ab") as sink:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink)


@pytest.mark.slow
def test_output_equals_input_despite_worker_kills(broker: EmbeddedBroker, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "ctp-in", partitions=PARTITIONS)
    create_topic(bootstrap, "ctp-out", partitions=PARTITIONS)
    acked = produce_acked(bootstrap, "ctp-in", (b"%06d" % i for i in range(RECORDS)), config={"linger.ms": 5})
    expected: dict[int, list[bytes]] = defaultdict(list)
    for partition, _offset, value in sorted(acked):
        expected[partition].append(value)

    log = tmp_path / "worker.log"
    rng = random.Random(42)
    worker = _start_worker(bootstrap, log)
    kills = 0
    try:
        while kills < KILLS:
            time.sleep(rng.uniform(0.4, 1.4))
            assert worker.poll() is None, f"worker ended before kill {kills + 1}: {log.read_text()[-2000:]}"
            worker.kill()  # SIGKILL: kill -9
            worker.wait()
            kills += 1
            worker = _start_worker(bootstrap, log)
        assert worker.wait(timeout=90) == 0, log.read_text()[-2000:]
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()

    output: dict[int, list[bytes]] = defaultdict(list)
    for record in read_topic(bootstrap, "ctp-out", idle_timeout=1.0):
        assert record.value is not None
        output[record.partition].append(record.value)
    for partition in range(PARTITIONS):
        got, want = output[partition], expected[partition]
        assert len(got) == len(want), f"partition {partition}: {len(got)} records, expected {len(want)}"
        assert got == want, f"partition {partition} differs from the input"
