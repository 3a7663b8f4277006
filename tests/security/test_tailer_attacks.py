"""The file tailer reads only allowed paths on every open, not only the first (issue 22, item 4).

Attack: the worker may read ``logs/``; the tailer follows ``logs/access.log``. Whoever can write in
``logs/`` (the log writer, logrotate's user) swaps in a symlink during a rotation, or leaves a
symlinked "rotated copy" next to the file, and the tailer used to re-open the path without checking
``allowed_paths``, sending a file from outside (here ``secret/app.log``, whose lines are valid
access-log lines of ip 6.6.6.6) into Kafka.

Expected refusal: nothing of the outside file reaches a topic. A swapped path fails the task with
``PathNotAllowed`` naming it (as a first open outside does); a symlinked sibling is skipped.

A real broker and connect worker; rotation by rename and by copy-truncate.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.runtime.config.worker_settings import WorkerSettings
from onceflow.runtime.service import ConnectWorkerService
from onceflow.runtime.status import TaskStatus, WorkState
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.runtime import read_records

LINE = '{ip} - - [22/Nov/2026:14:00:{s:02d} +0000] "GET /{path} HTTP/1.1" 200 5 "-" "ua"\n'
SECRET_IP = "6.6.6.6"


def lines(ip: str, count: int, path: str) -> str:
    return "".join(LINE.format(ip=ip, s=n % 60, path=f"{path}/{n}") for n in range(count))


@pytest.fixture
def worker(broker: EmbeddedBroker, tmp_path: Path) -> Iterator[ConnectWorkerService]:
    (tmp_path / "logs").mkdir()
    settings = WorkerSettings.model_validate(
        {
            "kafka": {"bootstrap_servers": broker.bootstrap_servers},
            "server": {"host": "127.0.0.1", "port": 0},
            "allowed_paths": [str(tmp_path / "logs")],
        }
    )
    service = ConnectWorkerService(settings).start()
    yield service
    service.stop()


def tail(worker: ConnectWorkerService, broker: EmbeddedBroker, name: str, file: Path) -> tuple[str, str]:
    """Start an ``access-log-file`` connector on ``file``; returns its event and dead-letter topics."""
    assert worker.herder is not None
    events, dead = f"{name}-events", f"{name}-dlq"
    for topic in (events, dead):
        create_topic(broker.bootstrap_servers, topic, 1)
    config = {"connector.class": "access-log-file", "file": str(file), "topic": events, "dead.letter.topic": dead,
              "poll.interval.ms": "50"}  # fmt: skip
    worker.herder.put_connector_config(name, config)
    return events, dead


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def committed_offset(worker: ConnectWorkerService, name: str) -> int:
    assert worker.herder is not None
    offsets = worker.herder.connector_offsets(name)
    return int(offsets[0][1]["offset"]) if offsets else -1


def status(worker: ConnectWorkerService, name: str) -> TaskStatus:
    assert worker.herder is not None
    return worker.herder.task_status(name, 0)


def values(broker: EmbeddedBroker, *topics: str) -> list[bytes]:
    return [r.value or b"" for t in topics for r in read_records(broker.bootstrap_servers, t, idle_timeout=0.5)]


def test_a_symlink_swapped_in_at_rotation_is_refused(
    broker: EmbeddedBroker, worker: ConnectWorkerService, tmp_path: Path
) -> None:
    logs, secret = tmp_path / "logs", tmp_path / "secret"
    secret.mkdir()
    (secret / "app.log").write_text(lines(SECRET_IP, 20, "secret"))
    log = logs / "access.log"
    log.write_text(lines("10.0.0.1", 10, "before"))
    topics = tail(worker, broker, "swap", log)
    wait_until(lambda: committed_offset(worker, "swap") == log.stat().st_size, "the first lines")

    # rename rotation, with the attacker's symlink where the new file should appear
    with log.open("a") as old:
        old.write(lines("10.0.0.1", 5, "last"))
    os.rename(log, logs / "access.log.1")
    log.symlink_to(secret / "app.log")

    def failed_or_leaked() -> bool:
        failed = status(worker, "swap").state is WorkState.FAILED
        return failed or any(SECRET_IP.encode() in v for v in values(broker, *topics))

    wait_until(failed_or_leaked, "the task to fail or the outside file to leak")
    read = values(broker, *topics)
    assert not [v for v in read if SECRET_IP.encode() in v], "a line of the outside file reached Kafka"
    trace = status(worker, "swap").trace
    assert "PathNotAllowed" in trace and str(log) in trace and "is not allowed" in trace, trace
    assert len(read) == 15, "every line of the rotated file, once"


def test_a_symlinked_rotated_copy_is_not_followed(
    broker: EmbeddedBroker, worker: ConnectWorkerService, tmp_path: Path
) -> None:
    logs, secret = tmp_path / "logs", tmp_path / "secret"
    secret.mkdir()
    log = logs / "access.log"
    first = lines("10.0.0.2", 10, "before")
    log.write_text(first)
    topics = tail(worker, broker, "copy", log)
    wait_until(lambda: committed_offset(worker, "copy") == log.stat().st_size, "the first lines")

    # copy-truncate rotation, and a "copy" that is a symlink to a file outside with the same first bytes
    (secret / "app.log").write_text(first + lines(SECRET_IP, 20, "secret"))
    (logs / "access.log.1").symlink_to(secret / "app.log")
    with log.open("r+") as truncated:
        truncated.truncate(0)
    log.write_text(lines("10.0.0.3", 3, "after"))

    wait_until(lambda: committed_offset(worker, "copy") == log.stat().st_size, "the truncated file's lines")
    assert status(worker, "copy").state is WorkState.RUNNING
    read = values(broker, *topics)
    assert not [v for v in read if SECRET_IP.encode() in v], "a line of the outside file reached Kafka"
    assert len(read) == 13
