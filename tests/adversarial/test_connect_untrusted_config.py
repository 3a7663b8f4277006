"""The Connect admin API runs only registered plugins, and the file connector reads only allowed paths (issue 14).

Before, ``connector.class=<module>:<Class>`` imported any module on the worker (running its
import-time code), and ``access-log-file`` read any file the worker could open, e.g. ``/etc/passwd``
into the topic (its lines as dead letters, with the original bytes). Now an unregistered class is
INVALID_ARGUMENT naming it and the known plugins, and nothing is imported; a file outside the
worker's ``allowed_paths`` (symlinks and ``..`` resolved; none when the list is empty) fails the task
before the file is opened, and nothing reaches a topic.

Real broker and worker processes, driven through the admin gRPC API.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract.clients import ConnectClient
from onceflow.contract.connect import TaskStateInfo
from onceflow.core import topics
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.runtime import WorkerProcess, read_records

pytestmark = pytest.mark.slow

HOSTILE_MODULE = """
from pathlib import Path
Path({marker!r}).write_text("imported")

from onceflow.testing.runtime.counter import CounterSourceConnector


class Hostile(CounterSourceConnector):
    pass
"""


def _wait(predicate: Callable[[], bool], timeout: float, worker: WorkerProcess, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} within {timeout}s\n{worker.log_tail()}"
        time.sleep(0.1)


def _task(client: ConnectClient, name: str) -> TaskStateInfo:
    return client.get_task_status(name, 0)


def test_an_unregistered_connector_class_is_refused_and_never_imported(broker: EmbeddedBroker, tmp_path: Path) -> None:
    modules = tmp_path / "modules"
    modules.mkdir()
    marker = tmp_path / "imported.txt"
    (modules / "hostile_plugin.py").write_text(HOSTILE_MODULE.format(marker=str(marker)))
    os.environ["PYTHONPATH"] = f"{modules}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    try:
        worker = WorkerProcess(tmp_path / "worker", {"kafka": {"bootstrap_servers": broker.bootstrap_servers}}).start()
    finally:
        os.environ["PYTHONPATH"] = os.environ["PYTHONPATH"].split(os.pathsep, 1)[1]
    try:
        with worker.client() as client:
            config = {"connector.class": "hostile_plugin:Hostile", "topic": "out"}
            with pytest.raises(grpc.RpcError) as refused:
                client.create_connector("hostile", config)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            details = refused.value.details() or ""
            assert "'hostile_plugin:Hostile' is not a registered connector plugin" in details
            assert "access-log-generator" in details  # the known plugins are listed
            assert not marker.exists(), "the module was imported"

            # the documented aliases of a registered plugin still work
            generator = "onceflow.ipcount.generator.AccessLogGeneratorConnector"
            config = {"connector.class": generator, "topic": "gen-out", "count": "10"}
            client.create_connector("gen", config)
    finally:
        worker.stop()


@pytest.mark.parametrize("case", ["etc-passwd", "dot-dot", "symlink", "no-allowed-paths"])
def test_the_file_connector_reads_only_allowed_paths(broker: EmbeddedBroker, tmp_path: Path, case: str) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "escape.log").symlink_to("/etc/passwd")
    file = {
        "etc-passwd": "/etc/passwd",
        "dot-dot": f"{logs}/../../../../../../../etc/passwd",
        "symlink": str(logs / "escape.log"),
        "no-allowed-paths": "/etc/passwd",
    }[case]
    allowed = [] if case == "no-allowed-paths" else [str(logs)]
    for topic in (topics.SOURCE_TOPIC, topics.DEAD_LETTER_TOPIC):
        create_topic(broker.bootstrap_servers, topic, 1)
    settings = {"kafka": {"bootstrap_servers": broker.bootstrap_servers}, "allowed_paths": allowed}
    worker = WorkerProcess(tmp_path / "worker", settings).start()
    try:
        with worker.client() as client:
            config = {"connector.class": "access-log-file", "file": file, "end.of.input": "eof"}
            client.create_connector("tail", config)
            _wait(lambda: _task(client, "tail").state == "FAILED", 30, worker, "task FAILED")
            trace = _task(client, "tail").trace
            assert "PathNotAllowed" in trace and "is not allowed" in trace, trace
        for topic in (topics.SOURCE_TOPIC, topics.DEAD_LETTER_TOPIC):
            assert read_records(broker.bootstrap_servers, topic, idle_timeout=0.5) == []
    finally:
        worker.stop()
