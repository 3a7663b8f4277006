"""``onceflow audit --input``: every line of a file accounted for, and a parser that drops good lines caught.

A real connect worker tails a real-format log into the embedded broker; the audit recounts the file
with its own independent parse. With ``format = main`` the tailer wrongly rejects every Apache common
and combined line (nginx's main format wants a third quoted field): the audit must say DIFFERENT and
that well-formed lines were dead-lettered, although the sinks would agree with the source topic.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core import topics
from onceflow.logproducer.sample import write_sample_log
from onceflow.runtime.storage import KafkaOffsetBackingStore
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.runtime import WorkerProcess

ONCEFLOW = Path(sys.executable).parent / "onceflow"


def _tail_to_the_end(broker: EmbeddedBroker, tmp_path: Path, log: Path, fmt: str) -> None:
    bootstrap = broker.bootstrap_servers
    for topic, partitions in ((topics.SOURCE_TOPIC, 2), (topics.DEAD_LETTER_TOPIC, 1)):
        create_topic(bootstrap, topic, partitions, {"retention.ms": "-1"})
    connector = tmp_path / "file.json"
    config = {"connector.class": "access-log-file", "file": str(log), "format": fmt, "end.of.input": "eof"}
    connector.write_text(json.dumps({"name": "file", "config": config}))
    worker = WorkerProcess(tmp_path / "worker", {"kafka": {"bootstrap_servers": bootstrap}}, [connector]).start()
    store = KafkaOffsetBackingStore({"bootstrap.servers": bootstrap}, topics.CONNECT_OFFSETS_TOPIC)
    deadline = time.monotonic() + 120
    try:
        while not any(offset.get("end_of_input") for _, offset in store.offsets("file")):
            assert time.monotonic() < deadline, worker.log_tail()
            time.sleep(0.3)
    finally:
        worker.stop()


def _audit(broker: EmbeddedBroker, log: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ONCEFLOW), "audit", "--input", str(log), "--bootstrap-servers", broker.bootstrap_servers],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.slow
def test_every_line_is_accounted_for(broker: EmbeddedBroker, tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    sample = write_sample_log(log, 5_000, seed=21)
    _tail_to_the_end(broker, tmp_path, log, "auto")
    result = _audit(broker, log)
    assert result.returncode == 0, result.stdout + result.stderr
    malformed = sum(sample.malformed.values())
    assert f"input: 5000 lines = {5000 - malformed} events + {malformed} malformed" in result.stdout
    assert f"pipeline: {5000 - malformed} events in the source topic + {malformed} dead letters; 0 lines" in (
        result.stdout
    )
    assert "accounting: EXACT" in result.stdout
    assert "overall: EXACT" in result.stdout


@pytest.mark.slow
def test_a_parser_that_rejects_a_valid_variant_is_caught(broker: EmbeddedBroker, tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    sample = write_sample_log(log, 5_000, seed=22)
    _tail_to_the_end(broker, tmp_path, log, "main")
    result = _audit(broker, log)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "accounting: DIFFERENT" in result.stdout
    assert "(well-formed lines were dead-lettered)" in result.stdout
    assert "overall: DIFFERENT (input lines not accounted for" in result.stdout
    # the pipeline dead-lettered more than the file's malformed lines, and counted fewer events
    dead = int(result.stdout.split("dead-lettered ", 1)[1].split(" ", 1)[0])
    assert dead > sum(sample.malformed.values())
