"""Reading progress: the source connector's committed positions, result tables, the coordinator's transactions."""

from __future__ import annotations

import socket
import sqlite3
import threading
from pathlib import Path

import pytest

from onceflow.contract import TransactionId
from onceflow.contract.clients import CoordinatorClient
from onceflow.coordinator.log import MemoryTransactionLog
from onceflow.coordinator.service import CoordinatorServer
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.demo.components import JOB, Context
from onceflow.demo.observe import (
    InputProgress,
    Observer,
    input_from_offsets,
    produced_from_offsets,
    scrape,
    sqlite_totals,
)
from onceflow.demo.options import DemoOptions
from onceflow.demo.run_dir import RunDir
from onceflow.testing.coordinator import FakeParticipants, staged_files


def test_produced_counts_every_task_of_the_generator() -> None:
    one_task = [({"generator": "access-log", "task": 0.0, "tasks": 1.0}, {"seq": 999.0})]
    assert produced_from_offsets(one_task) == 1000
    # Task k of n emits k, k + n, ...: task 0 of 2 at seq 10 -> 0..10 (6 events), task 1 at 7 -> 1..7 (4).
    two_tasks: list[tuple[dict[str, object], dict[str, object]]] = [
        ({"generator": "access-log", "task": 0, "tasks": 2}, {"seq": 10}),
        ({"generator": "access-log", "task": 1, "tasks": 2}, {"seq": 7}),
        ({"other": "partition"}, {"seq": 5}),
    ]
    assert produced_from_offsets(two_tasks) == 10


def test_sqlite_totals(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    assert sqlite_totals(path, "results") == (0, 0)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE results (window_start INT, ip TEXT, count INT)")
        db.executemany("INSERT INTO results VALUES (?, ?, ?)", [(0, "a", 3), (0, "b", 4)])
    assert sqlite_totals(path, "results") == (2, 7)
    assert sqlite_totals(path, "missing_table") is None


def test_the_input_ends_when_every_source_partition_ended() -> None:
    ended: dict[str, object] = {"seq": 8.0, "end_of_input": True}
    assert input_from_offsets([({"generator": "access-log", "task": 0, "tasks": 2}, ended)]) == InputProgress(
        5, 5, 0, False
    )  # task 0 of 2 emitted 0, 2, ..., 8; task 1 has not even started
    both: list[tuple[dict[str, object], dict[str, object]]] = [
        ({"generator": "access-log", "task": 0, "tasks": 2}, ended),
        ({"generator": "access-log", "task": 1, "tasks": 2}, {"seq": 9, "end_of_input": True}),
    ]
    assert input_from_offsets(both).ended
    file = {"file": "/x/access.log"}
    position = {"offset": 10, "lines": 1000.0, "events": 990, "dead_letters": 10}
    assert input_from_offsets([(file, position)]) == InputProgress(1000, 990, 10, False)
    assert input_from_offsets([(file, {**position, "end_of_input": True})]).ended


def test_transactions_are_tallied_from_the_coordinator_and_kept_while_it_is_down(tmp_path: Path) -> None:
    fakes = FakeParticipants(["sqlite"])
    settings = CoordinatorSettings.model_validate(
        {"server": {"port": 0}, "transaction_log": {"backend": "memory"}, "prepare_timeout_ms": 1000}
    )
    server = CoordinatorServer(settings, log=MemoryTransactionLog(), connector=fakes).start()
    run = RunDir(tmp_path / "run")
    state = run.create(DemoOptions().new_state("run"))
    state.ports["coordinator"] = server.port
    observer = Observer(Context(run, state))
    try:
        with CoordinatorClient(f"127.0.0.1:{server.port}") as client:
            epoch = client.register_writer(JOB, "driver").epoch
            client.register_participants(JOB, epoch, fakes.refs)
            client.commit_transaction(TransactionId(JOB, 0), epoch, staged_files(JOB, 0))
            fakes["sqlite"].vote_no = "bad file"
            client.commit_transaction(TransactionId(JOB, 1), epoch, staged_files(JOB, 1))
        tally = observer.transactions()
        assert tally is not None
        assert (tally.committed_batches, tally.aborted_batches, tally.in_doubt) == ({0}, {1}, 0)
    finally:
        server.stop(grace=0)
    assert observer.transactions() is None  # down: the caller keeps its last tally
    assert observer.tally.committed == 1


def _metrics_server(answer: bytes) -> tuple[socket.socket, threading.Thread]:
    """A one-connection HTTP endpoint that sends ``answer`` as it is, then closes (a killed exporter)."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        connection, _ = server.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nonceflow_spark_last_batch_id 3\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 27\r\n\r\nonceflow_spark_last_batch_i",
        b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n\xff\xfe\x00\x01",
    ],
    ids=["short-body", "torn-line", "not-utf8"],
)
def test_a_metrics_endpoint_killed_mid_answer_is_no_answer(answer: bytes) -> None:
    server, thread = _metrics_server(answer)
    with server:
        assert scrape(server.getsockname()[1], timeout=5) is None
        thread.join(5)


def test_a_whole_metrics_answer_is_read() -> None:
    body = b"# TYPE onceflow_spark_last_batch_id gauge\nonceflow_spark_last_batch_id 3.0\n"
    server, thread = _metrics_server(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    with server:
        assert scrape(server.getsockname()[1], timeout=5) == {"onceflow_spark_last_batch_id": 3.0}
        thread.join(5)
