"""A log from long ago is not lost to the source topic's time retention.

Kafka rolls a segment when a record is ``segment.ms`` newer than the segment's first one, and deletes a
rolled segment whose newest record is older than ``retention.ms``. Records stamped with a 1995 event
time, followed by a transaction marker stamped now, would be rolled away and deleted at the broker's
next retention pass, before a job had read them. The tailer leaves the record time to the producer.
"""

from __future__ import annotations

import time
from pathlib import Path

from onceflow.core import topics
from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.testing.broker.fixtures import BrokerFactory
from onceflow.testing.runtime import read_records

from .conftest import start_worker, wait_tailed

LINE = '192.0.2.{n} - - [01/Jul/1995:00:00:{s:02d} -0400] "GET /history/apollo/{n}.html HTTP/1.0" 200 {n}'


def test_events_of_a_1995_log_outlive_the_retention_passes(broker_factory: BrokerFactory, tmp_path: Path) -> None:
    broker = broker_factory(maintenance_interval_ms=200)
    log = tmp_path / "access.log"
    log.write_text("".join(LINE.format(n=n, s=n % 60) + "\n" for n in range(100)))
    service = start_worker(broker.bootstrap_servers, log)
    try:
        assert service.herder is not None
        service.herder.create_connector("tail", {"connector.class": "access-log-file", "file": str(log)})
        wait_tailed(service, "tail", log)
        with log.open("a") as more:  # a second transaction after the first one's marker
            more.write("".join(LINE.format(n=n, s=n % 60) + "\n" for n in range(100, 200)))
        wait_tailed(service, "tail", log)
    finally:
        service.stop()
    time.sleep(2.0)  # ten retention passes
    events = read_records(broker.bootstrap_servers, topics.SOURCE_TOPIC, idle_timeout=0.3)
    paths = sorted(ACCESS_EVENT_SERDE.decode(r.value or b"")["path"] for r in events)
    assert paths == sorted(f"/history/apollo/{n}.html" for n in range(200))
    assert {ACCESS_EVENT_SERDE.decode(r.value or b"")["event_time"] for r in events} <= {
        804_571_200_000 + s * 1000 for s in range(60)
    }, "the event time stays in the value"
