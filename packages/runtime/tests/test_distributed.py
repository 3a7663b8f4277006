"""Distributed mode: two worker processes share the tasks through consumer-group membership; when one
is killed (-9) its tasks move to the other and resume with no loss and no duplicates."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.runtime.storage import KafkaOffsetBackingStore
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.runtime import WorkerProcess, read_records

COUNT = 6000
COUNTER = "onceflow.testing.runtime.counter:CounterSourceConnector"


def _wait(predicate: Callable[[], Any], timeout: float, what: str, *workers: WorkerProcess) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except grpc.RpcError:
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            logs = "\n".join(w.log_tail(30) for w in workers)
            raise AssertionError(f"timed out waiting for {what}\n{logs}")
        time.sleep(0.2)


def _owners(worker: WorkerProcess) -> dict[int, str]:
    with worker.client() as client:
        status = client.get_connector_status("dist")
    return {t.id: t.worker_id for t in status.tasks if t.state == "RUNNING"}


@pytest.mark.slow
def test_tasks_split_and_move_when_a_worker_dies(broker: EmbeddedBroker, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "dist-out", 2)

    def settings(worker_id: str) -> dict[str, Any]:
        return {
            "mode": "distributed",
            "worker_id": worker_id,
            "group_id": "cluster-a",
            "kafka": {"bootstrap_servers": bootstrap},
            "extra_plugins": [COUNTER],
        }

    one = WorkerProcess(tmp_path / "w1", settings("w1")).start()
    two = WorkerProcess(tmp_path / "w2", settings("w2")).start()
    try:
        config = {"connector.class": COUNTER, "topic": "dist-out", "count": str(COUNT), "rate": "200", "tasks.max": "2"}
        with two.client() as client:
            client.create_connector("dist", config)
        # Both workers see the connector (configs topic) and each runs one task (group assignment).
        owners = _wait(lambda: (o := _owners(one)) and len(o) == 2 and set(o.values()) == {"w1", "w2"} and o, 40,
                       "the tasks to split over both workers", one, two)  # fmt: skip
        assert sorted(owners.values()) == ["w1", "w2"]
        with one.client() as client:
            assert client.list_connectors().names == ("dist",)
        time.sleep(2)
        two.kill()
        _wait(lambda: _owners(one) == {0: "w1", 1: "w1"}, 40, "w2's task to move to w1", one)
        store = KafkaOffsetBackingStore({"bootstrap.servers": bootstrap}, "_onceflow_connect_offsets")
        _wait(lambda: sorted(o["n"] for _, o in store.offsets("dist")) == [COUNT - 2, COUNT - 1], 60, "the end", one)
    finally:
        one.stop()
        two.stop()
    seqs = [int(r.headers["seq"]) for r in read_records(bootstrap, "dist-out")]
    assert Counter(seqs) == Counter(range(COUNT))
