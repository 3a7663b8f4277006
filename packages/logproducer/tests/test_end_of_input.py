"""A finished file ends its input: every line once, then one end-of-input marker per partition.

Real worker processes on the embedded broker; ``kill -9`` while the file is being read and while the
input ends must neither lose nor repeat a line, and the marker's end offsets cover every event.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core import topics
from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.core.end_of_input import HEADER, EndOfInputMarker
from onceflow.runtime.storage import KafkaOffsetBackingStore
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.runtime import Record, WorkerProcess, read_records

LINE = '10.0.{a}.{b} - - [22/Nov/2026:14:{m:02d}:{s:02d} +0000] "GET /p/{n} HTTP/1.1" 200 5 "-" "ua {n}"'


def _write_log(path: Path, lines: int) -> None:
    rows = [LINE.format(a=n % 7, b=n % 250, m=(n // 60) % 60, s=n % 60, n=n) for n in range(lines)]
    rows.insert(lines // 2, "this is not an access log line")
    # the last line has no newline: a finished file's last line still counts
    path.write_text("\n".join(rows))


def _wait(predicate: Callable[[], bool], timeout: float, worker: WorkerProcess) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, worker.log_tail()
        time.sleep(0.3)


def _connector(tmp_path: Path, log: Path, mode: str, **extra: str) -> Path:
    path = tmp_path / "file.json"
    config = {"connector.class": "access-log-file", "file": str(log), "end.of.input": mode,
              "batch.max.lines": "500", **extra}  # fmt: skip
    path.write_text(json.dumps({"name": "file", "config": config}))
    return path


def _markers(records: list[Record]) -> list[Record]:
    return [r for r in records if HEADER in r.headers]


@pytest.mark.slow
def test_a_finished_file_ends_its_input_once_across_kill_9(broker: EmbeddedBroker, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, topics.SOURCE_TOPIC, 2, {"retention.ms": "-1"})
    log = tmp_path / "access.log"
    lines = 20_000
    _write_log(log, lines)
    worker = WorkerProcess(
        tmp_path / "worker", {"kafka": {"bootstrap_servers": bootstrap}}, [_connector(tmp_path, log, "eof")]
    ).start()
    store = KafkaOffsetBackingStore({"bootstrap.servers": bootstrap}, topics.CONNECT_OFFSETS_TOPIC)

    def offset() -> dict[str, object]:
        offsets = store.offsets("file")
        return offsets[0][1] if offsets else {}

    try:
        kills = 0
        while not offset().get("end_of_input") and kills < 4:
            time.sleep(0.7)
            worker.kill()
            kills += 1
            worker.start()
        _wait(lambda: bool(offset().get("end_of_input")), 120, worker)
        _wait(lambda: len(_markers(read_records(bootstrap, topics.SOURCE_TOPIC))) >= 2, 60, worker)
    finally:
        worker.stop()
    records = read_records(bootstrap, topics.SOURCE_TOPIC)
    events = [r for r in records if HEADER not in r.headers]
    paths = sorted(int(ACCESS_EVENT_SERDE.decode(r.value or b"")["path"].rsplit("/", 1)[1]) for r in events)
    assert paths == list(range(lines)), "every line exactly once, the unterminated last one included"
    dead = read_records(bootstrap, topics.DEAD_LETTER_TOPIC)
    assert len(dead) == 1
    final = offset()
    assert (final["lines"], final["events"], final["dead_letters"]) == (lines + 1, lines, 1)
    markers = _markers(records)
    assert {m.partition for m in markers} == {0, 1}
    for marker in markers:
        value = EndOfInputMarker.decode(marker.value)
        assert value.source == "file"
        # every event lies below the marker's end offsets, and the marker itself above them
        read_until = {p: max(r.offset for r in events if r.partition == p) + 1 for p in (0, 1)}
        assert all(value.end_offsets[p] >= read_until[p] for p in (0, 1))
        assert marker.offset >= value.end_offsets[marker.partition]


def test_idle_ends_a_followed_file_and_a_new_line_before_it_still_counts(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, topics.SOURCE_TOPIC, 1, {"retention.ms": "-1"})
    log = tmp_path / "access.log"
    _write_log(log, 10)
    with log.open("a") as out:
        out.write("\n")
    connector = _connector(tmp_path, log, "idle", **{"end.of.input.idle.ms": "3000"})
    worker = WorkerProcess(tmp_path / "worker", {"kafka": {"bootstrap_servers": bootstrap}}, [connector]).start()
    try:
        time.sleep(1.5)
        with log.open("a") as out:  # appended while followed: still part of the input
            out.write(LINE.format(a=1, b=1, m=0, s=0, n=10) + "\n")
        _wait(lambda: bool(_markers(read_records(bootstrap, topics.SOURCE_TOPIC))), 60, worker)
    finally:
        worker.stop()
    records = read_records(bootstrap, topics.SOURCE_TOPIC)
    assert len(records) - len(_markers(records)) == 11
