"""An undecodable record in the Connect configs topic cannot break the worker (issue 22, item 4: "forged connectors").

Attack: any client that may write ``_onceflow_connect_configs`` (ACLs stop that: the acls work)
appends records the worker cannot decode: a value that is not JSON, a connector record without its
task configs, a key that is not UTF-8, an unknown target state, a restart request with foreign
fields (and a task status that is not one to the status topic). The worker's config reader used to
die on the first of them, so the worker could neither start nor restart.

Expected: each record is skipped and reported (a ``storage.record_skipped`` line naming the key and
the reason, and ``onceflow_connect_internal_records_skipped_total``), the worker starts, and it serves
the other connectors, also when bad records arrive while it runs. A real broker and worker.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.topics import CONNECT_CONFIGS_TOPIC, CONNECT_STATUS_TOPIC
from onceflow.runtime.config.worker_settings import WorkerSettings
from onceflow.runtime.service import ConnectWorkerService
from onceflow.runtime.status import WorkState
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.runtime import read_records

COUNTER = "onceflow.testing.runtime.counter:CounterSourceConnector"
METRIC = "onceflow_connect_internal_records_skipped_total"
FORGED: list[tuple[bytes, bytes | None]] = [
    (b"connector-evil", b"{not json"),
    (b"connector-half", json.dumps({"config": {"connector.class": COUNTER}}).encode()),
    (b"connector-typed", json.dumps({"config": {"count": 3}, "tasks": "all"}).encode()),
    (b"\xff\xfeconnector-x", b"{}"),
    (b"target-state-good", json.dumps({"state": "EXPLODE"}).encode()),
    (b"target-state-evil", b"[]"),
]


def worker(broker: EmbeddedBroker) -> ConnectWorkerService:
    settings = {
        "mode": "distributed",
        "worker_id": "w1",
        "group_id": "forged",
        "kafka": {"bootstrap_servers": broker.bootstrap_servers},
        "server": {"host": "127.0.0.1", "port": 0},
        "extra_plugins": [COUNTER],
    }
    return ConnectWorkerService(WorkerSettings.model_validate(settings)).start()


def forge(
    broker: EmbeddedBroker, records: list[tuple[bytes, bytes | None]], topic: str = CONNECT_CONFIGS_TOPIC
) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for key, value in records:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(10) == 0


def wait_until(predicate: Callable[[], Any], what: str, timeout: float = 40) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def skipped(service: ConnectWorkerService, topic: str = CONNECT_CONFIGS_TOPIC) -> float:
    value = service.metrics.registry.get_sample_value(METRIC, {"topic": topic})
    return value or 0.0


def counted(broker: EmbeddedBroker, topic: str) -> int:
    return len(read_records(broker.bootstrap_servers, topic, idle_timeout=0.3))


def test_undecodable_config_records_are_skipped_and_the_worker_serves_the_rest(
    broker: EmbeddedBroker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    create_topic(broker.bootstrap_servers, "good-out", 1)
    create_topic(broker.bootstrap_servers, "late-out", 1)
    first = worker(broker)
    try:
        assert first.herder is not None
        first.herder.put_connector_config("good", {"connector.class": COUNTER, "topic": "good-out", "count": "50"})
        wait_until(lambda: counted(broker, "good-out") == 50, "the good connector's records")
    finally:
        first.stop()
    forge(broker, FORGED)
    forge(broker, [(b"status-task-good-0", b"\xff"), (b"status-task-good-1", b"{}")], topic=CONNECT_STATUS_TOPIC)

    caplog.set_level(logging.WARNING, logger="onceflow.runtime.storage.kafka_log")
    second = worker(broker)  # before: "log reader of _onceflow_connect_configs failed", no start
    try:
        assert second.herder is not None
        assert skipped(second) == len(FORGED)
        assert skipped(second, CONNECT_STATUS_TOPIC) == 2
        lines = [r for r in caplog.records if r.getMessage() == "storage.record_skipped"]
        assert len(lines) == len(FORGED) + 2
        assert second.herder.connectors() == ["good"]
        wait_until(lambda: second.herder is not None and second.herder.task_status("good", 0).state
                   is WorkState.RUNNING, "the good connector to run")  # fmt: skip

        # bad records while it runs: skipped too, and the config reader keeps serving writes
        forge(broker, [(b"connector-later", b"\x00\x01"), (b"restart-good", json.dumps({"bogus": 1}).encode())])
        second.herder.put_connector_config("late", {"connector.class": COUNTER, "topic": "late-out", "count": "20"})
        wait_until(lambda: counted(broker, "late-out") == 20, "a connector created after the forgery to run")
        assert skipped(second) == len(FORGED) + 2
    finally:
        second.stop()
