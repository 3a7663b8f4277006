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
from onceflow.testing.logproducer.container import docker_entries
from onceflow.testing.runtime import WorkerProcess

ONCEFLOW = Path(sys.executable).parent / "onceflow"


def _tail_to_the_end(broker: EmbeddedBroker, tmp_path: Path, log: Path, fmt: str, **extra: str) -> None:
    bootstrap = broker.bootstrap_servers
    for topic, partitions in ((topics.SOURCE_TOPIC, 2), (topics.DEAD_LETTER_TOPIC, 1)):
        create_topic(bootstrap, topic, partitions, {"retention.ms": "-1"})
    connector = tmp_path / "file.json"
    config = {"connector.class": "access-log-file", "file": str(log), "format": fmt, "end.of.input": "eof", **extra}
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


def _audit(broker: EmbeddedBroker, log: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ONCEFLOW), "audit", "--input", str(log), "--bootstrap-servers", broker.bootstrap_servers, *options],
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


@pytest.mark.slow
def test_a_docker_log_is_accounted_for_line_by_line(broker: EmbeddedBroker, tmp_path: Path) -> None:
    """A json-file log of the sample, long lines in pieces and an error-log line on stderr now and
    then: the audit's own recount of the wrapper agrees with the tailer's, and says so when told the
    file is not a container log."""
    plain = tmp_path / "plain.log"
    sample = write_sample_log(plain, 3_000, seed=23)
    entries: list[bytes] = []
    for n, line in enumerate(plain.read_bytes().decode("utf-8", "replace").split("\n")[:-1]):
        long = line.replace(" HTTP/", "?" + "a" * 40_000 + " HTTP/", 1)  # three pieces
        pieces = docker_entries(long if n % 100 == 1 else line, n=n)
        errors = docker_entries("2026/11/27 03:00:00 [notice] 1#1: signal process started", "stderr", n=n)
        entries += [pieces[0], *(errors if n % 100 == 1 else []), *pieces[1:]]
    log = tmp_path / "container-json.log"
    log.write_bytes(b"\n".join(entries) + b"\n")
    _tail_to_the_end(broker, tmp_path, log, "auto", **{"container.log": "docker"})
    result = _audit(broker, log)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "input: 3030 lines = " in result.stdout, "30 stderr lines, and a long line counts once"
    assert "accounting: EXACT" in result.stdout
    assert "overall: EXACT" in result.stdout
    assert sum(sample.malformed.values()) > 0
    wrong = _audit(broker, log, "--container-log", "none")
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert "accounting: DIFFERENT" in wrong.stdout
