"""Malformed lines go to the dead-letter topic with their kind and reason, cut to fit a Kafka message;
every good line still arrives."""

from __future__ import annotations

import hashlib
from pathlib import Path

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core import topics
from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.logproducer.dead_letter import (
    DEFAULT_MAX_VALUE_BYTES,
    KIND_HEADER,
    ORIGINAL_LENGTH_HEADER,
    ORIGINAL_SHA256_HEADER,
    REASON_HEADER,
)
from onceflow.testing.runtime import read_records

from .conftest import start_worker, wait_tailed

GOOD = '10.0.0.{n} - - [22/Nov/2026:14:30:{s:02d} +0000] "GET /seq/{n} HTTP/1.1" 200 {n} "-" "test"'


def test_malformed_lines_are_dead_lettered_and_good_lines_arrive(broker: EmbeddedBroker, tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    lines = []
    for n in range(60):
        if n == 13:  # 500 KB: fits in a Kafka message only once and cut
            lines.append(GOOD.format(n=n, s=0).replace("/seq/13", "/" + "x" * 500_000))
            lines[-1] = lines[-1].replace(" 200 ", " 2x0 ")
        elif n % 10 == 3:
            lines.append(f"this is not a log line {n}")
        elif n % 10 == 7:
            lines.append(GOOD.format(n=n, s=n % 60).replace("10.0.0.", "999.1.1."))
        else:
            lines.append(GOOD.format(n=n, s=n % 60))
    log.write_text("\n".join(lines) + "\n")
    service = start_worker(broker.bootstrap_servers, log)
    try:
        assert service.herder is not None
        service.herder.create_connector("tail", {"connector.class": "access-log-file", "file": str(log)})
        wait_tailed(service, "tail", log)
        status = service.herder.task_status("tail", 0)
        assert status.state.value == "RUNNING"
    finally:
        service.stop()
    events = read_records(broker.bootstrap_servers, topics.SOURCE_TOPIC, idle_timeout=0.3)
    paths = [ACCESS_EVENT_SERDE.decode(r.value or b"")["path"] for r in events]
    assert paths == [f"/seq/{n}" for n in range(60) if n % 10 not in (3, 7)]
    assert all(r.key == ACCESS_EVENT_SERDE.decode(r.value or b"")["ip"].encode() for r in events)
    dead = read_records(broker.bootstrap_servers, topics.DEAD_LETTER_TOPIC, idle_timeout=0.3)
    originals = [lines[n].encode() for n in range(60) if n % 10 in (3, 7)]
    assert [r.value for r in dead] == [line[:DEFAULT_MAX_VALUE_BYTES] for line in originals]
    assert [int(r.headers[ORIGINAL_LENGTH_HEADER]) for r in dead] == [len(line) for line in originals]
    assert [r.headers[ORIGINAL_SHA256_HEADER].decode() for r in dead] == [
        hashlib.sha256(line).hexdigest() for line in originals
    ]
    kinds = [r.headers[KIND_HEADER].decode() for r in dead]
    assert kinds[:4] == ["unrecognised", "bad_ip", "bad_status", "bad_ip"]
    reasons = [r.headers[REASON_HEADER].decode() for r in dead]
    assert "not an access log line" in reasons[0]
    assert "bad client ip '999.1.1.7'" in reasons[1]
    assert "status '2x0' is not a number" in reasons[2]
