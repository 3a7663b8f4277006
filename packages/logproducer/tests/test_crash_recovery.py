"""kill -9 the worker again and again: every event still arrives exactly once, in per-key order."""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core import topics
from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.runtime.storage import KafkaOffsetBackingStore
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.runtime import Record, WorkerProcess, read_records

TOTAL = 200_000
KILLS = 10


def _check_exactly_once_in_key_order(records: list[Record], seq_of: Callable[[Record], int]) -> None:
    seqs = [seq_of(r) for r in records]
    assert len(seqs) == TOTAL, f"{len(seqs)} records, {len(seqs) - len(set(seqs))} duplicates"
    assert sorted(seqs) == list(range(TOTAL))
    last: dict[bytes | None, int] = defaultdict(lambda: -1)
    for record, seq in zip(records, seqs, strict=True):
        assert seq > last[record.key], f"key {record.key!r}: {seq} after {last[record.key]}"
        last[record.key] = seq


class KillCount:
    """How many times the worker has been killed so far (read by a LogWriter to pace itself)."""

    def __init__(self) -> None:
        self.value = 0


def _kill_repeatedly(worker: WorkerProcess, finished: Callable[[], bool], count: KillCount | None = None) -> int:
    count = count or KillCount()
    rng = random.Random(42)
    while count.value < KILLS:
        time.sleep(rng.uniform(0.4, 1.5))
        assert not finished(), f"the run finished after only {count.value} kills; slow it down"
        worker.kill()
        count.value += 1
        worker.start()
    return count.value


def _wait(predicate: Callable[[], bool], timeout: float, worker: WorkerProcess) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, worker.log_tail()
        time.sleep(0.3)


@pytest.mark.slow
def test_generator_survives_repeated_kill_9(broker: EmbeddedBroker, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, topics.SOURCE_TOPIC, 3, {"retention.ms": "-1"})  # event times are in the past
    connector = tmp_path / "gen.json"
    config = {"connector.class": "access-log-generator", "seed": "11", "count": str(TOTAL), "rate": "7000"}
    connector.write_text(json.dumps({"name": "gen", "config": config}))
    worker = WorkerProcess(tmp_path / "worker", {"kafka": {"bootstrap_servers": bootstrap}}, [connector]).start()
    store = KafkaOffsetBackingStore({"bootstrap.servers": bootstrap}, topics.CONNECT_OFFSETS_TOPIC)

    def finished() -> bool:
        offsets = store.offsets("gen")
        return bool(offsets) and offsets[0][1]["seq"] == TOTAL - 1

    try:
        assert _kill_repeatedly(worker, finished) >= KILLS
        _wait(finished, 120, worker)
    finally:
        worker.stop()
    records = read_records(bootstrap, topics.SOURCE_TOPIC)
    _check_exactly_once_in_key_order(records, lambda r: int(r.headers["seq"]))
    assert worker.log_tail(2000).count("task.producer_initialized") >= KILLS + 1


LINE = '10.1.{a}.{b} - - [22/Nov/2026:14:{m:02d}:{s:02d} +0000] "GET /seq/{n} HTTP/1.1" 200 {n} "-" "crash-test"\n'


class LogWriter(threading.Thread):
    """Appends TOTAL lines at about ``rate`` lines/s; rotates by rename, later by copy-truncate."""

    def __init__(
        self, log: Path, rate: int, before_copy_truncate: Callable[[], None], kills: KillCount | None = None
    ) -> None:
        super().__init__(daemon=True)
        self.log = log
        self.rate = rate
        # Never more than (kills + 1) / (KILLS + 1) of the lines before the kills are done, so the run
        # cannot finish before every kill happened, however slow the machine is.
        self.kills = kills
        self.before_copy_truncate = before_copy_truncate
        self.written = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            chunk = self.rate // 20
            started = time.monotonic()
            while self.written < TOTAL:
                while self.kills is not None and self.kills.value < KILLS:
                    if self.written < (self.kills.value + 1) * TOTAL // (KILLS + 1):
                        break
                    time.sleep(0.05)
                    started = time.monotonic() - self.written / self.rate
                if self.written == 70_000:
                    os.rename(self.log, self.log.with_name("access.log.1"))  # rename rotation
                if self.written == 140_000:
                    self.before_copy_truncate()
                    shutil.copyfile(self.log, self.log.with_name("access.log.2"))  # copy-truncate rotation
                    os.truncate(self.log, 0)
                stop = min(
                    self.written + chunk,
                    TOTAL,
                    70_000 if self.written < 70_000 else 140_000 if self.written < 140_000 else TOTAL,
                )
                text = "".join(
                    LINE.format(a=n % 7, b=n % 13, m=(n // 60) % 60, s=n % 60, n=n) for n in range(self.written, stop)
                )
                with self.log.open("a") as fh:
                    fh.write(text)
                self.written = stop
                time.sleep(max(0.0, started + self.written / self.rate - time.monotonic()))
        except BaseException as exc:
            self.error = exc


@pytest.mark.slow
def test_file_tailer_survives_repeated_kill_9_across_rotations(broker: EmbeddedBroker, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, topics.SOURCE_TOPIC, 3, {"retention.ms": "-1"})  # event times are in the past
    log = tmp_path / "logs" / "access.log"
    log.parent.mkdir()
    log.touch()
    connector = tmp_path / "tail.properties"
    connector.write_text(f"name=tail\nconnector.class=access-log-file\nfile={log}\nformat=combined\n")
    worker = WorkerProcess(tmp_path / "worker", {"kafka": {"bootstrap_servers": bootstrap}}, [connector]).start()
    store = KafkaOffsetBackingStore({"bootstrap.servers": bootstrap}, topics.CONNECT_OFFSETS_TOPIC)

    def committed() -> dict[str, int]:
        offsets = store.offsets("tail")
        return offsets[0][1] if offsets else {}

    def tailer_in_current_file() -> None:
        # The tailer follows one rotation at a time: before the copy-truncate, let it reach the file the
        # rename created (kills go on meanwhile).
        deadline = time.monotonic() + 60
        while committed().get("inode") != log.stat().st_ino:
            assert time.monotonic() < deadline, "tailer never reached the new file"
            time.sleep(0.2)

    kills = KillCount()
    writer = LogWriter(log, 8000, tailer_in_current_file, kills)
    writer.start()

    def finished() -> bool:
        position = committed()
        return (
            writer.written == TOTAL
            and position.get("inode") == log.stat().st_ino
            and position.get("offset") == log.stat().st_size
        )

    try:
        assert _kill_repeatedly(worker, finished, kills) >= KILLS
        writer.join(120)
        assert writer.error is None, writer.error
        _wait(finished, 120, worker)
    finally:
        worker.stop()
    records = read_records(bootstrap, topics.SOURCE_TOPIC)
    _check_exactly_once_in_key_order(
        records, lambda r: int(ACCESS_EVENT_SERDE.decode(r.value or b"")["path"].removeprefix("/seq/"))
    )
    assert not read_records(bootstrap, topics.DEAD_LETTER_TOPIC, idle_timeout=0.2) if _topic_exists(bootstrap) else True


def _topic_exists(bootstrap: str) -> bool:
    from confluent_kafka.admin import AdminClient

    return topics.DEAD_LETTER_TOPIC in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
