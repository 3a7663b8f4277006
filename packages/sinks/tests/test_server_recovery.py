"""kill -9 of a participant process with prepared transactions, and recovery through the coordinator.

The participant runs as a real child process (``python -m onceflow.sinks``); the coordinator is a
tiny in-test TransactionCoordinator answering GetTransaction.
"""

from __future__ import annotations

import socket
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract import TransactionId
from onceflow.contract.staging import StagedFile
from onceflow.core.avro import IP_COUNT_SERDE
from onceflow.core.topics import SINK_TOPIC
from onceflow.ipcount.schema import ip_count_table_binding, ip_count_topic_binding
from onceflow.testing.broker.clients import read_topic

from .conftest import W0, Stage, row
from .fake_coordinator import ABORTED, COMMITTED, PREPARING, running_coordinator
from .participant_process import ParticipantProcess, write_config


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def processes() -> Iterator[list[ParticipantProcess]]:
    started: list[ParticipantProcess] = []
    yield started
    for process in started:
        process.stop()


def _prepare(process: ParticipantProcess, sink: str, job: str, batch: int, files: list[StagedFile]) -> None:
    """Prepare as the coordinator does for a job writing the IP-count results: with the job's binding of ``sink``."""
    binding = ip_count_topic_binding(sink) if sink == "kafka" else ip_count_table_binding(sink)
    with process.client() as client:
        vote = client.prepare_transaction(sink, TransactionId(job, batch), files, [binding], timeout_s=30)
    assert vote.vote_commit, vote.reason


def _sqlite_results(path: Path) -> list[tuple[int, str, int]]:
    with sqlite3.connect(path) as db:
        return sorted(db.execute("SELECT window_start, ip, count FROM ip_counts"))


def _pg_results(dsn: str) -> list[tuple[int, str, int]]:
    with psycopg.connect(dsn) as conn:
        return sorted(conn.execute("SELECT window_start, ip, count FROM ip_counts").fetchall())


def _pg_gids(dsn: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return sorted(g for (g,) in conn.execute("SELECT gid FROM pg_prepared_xacts").fetchall())


def test_prepared_sqlite_and_postgres_transactions_survive_kill_9(
    tmp_path: Path, postgres_dsn: str, stage: Stage, processes: list[ParticipantProcess]
) -> None:
    coordinator_port = _free_port()
    config = write_config(
        tmp_path / "participant.toml",
        coordinator=f"127.0.0.1:{coordinator_port}",
        sinks=[
            {"name": "sqlite", "kind": "sqlite", "options": {"path": str(tmp_path / "sink.db")}},
            {"name": "pg", "kind": "postgres", "options": {"dsn": postgres_dsn}},
        ],
    )
    participant = ParticipantProcess(config, tmp_path)
    processes.append(participant.start())

    # Batch 0 will be committed by the coordinator, batch 1 aborted; both are prepared on both sinks.
    committed = stage("job", 0, [row("a", 1), row("b", 2)])
    # (different keys: a prepared PostgreSQL transaction holds its row locks until it is resolved)
    aborted = stage("job", 1, [row("c", 100)])
    for sink in ("sqlite", "pg"):
        _prepare(participant, sink, "job", 0, committed)
        _prepare(participant, sink, "job", 1, aborted)
    participant.kill()

    assert _pg_gids(postgres_dsn) == ["onceflow:pg:job:0", "onceflow:pg:job:1"], "PG keeps the prepared transactions"
    assert _sqlite_results(tmp_path / "sink.db") == []

    # Restarted while the coordinator is down: it waits, and takes no new work (it does not even listen).
    participant.start()
    _until(lambda: "recover.coordinator_unreachable" in participant.log_tail(), "the restarted participant's recovery")
    assert not participant.is_ready()

    decisions = {("job", 0): COMMITTED, ("job", 1): ABORTED}
    with running_coordinator(decisions, port=coordinator_port) as (coordinator, _):
        participant.wait_ready()
        assert sorted(set(coordinator.asked)) == [("job", 0), ("job", 1)]

    expected = [(W0, "a", 1), (W0, "b", 2)]
    assert _sqlite_results(tmp_path / "sink.db") == expected
    assert _pg_results(postgres_dsn) == expected
    assert _pg_gids(postgres_dsn) == []
    with participant.client() as client:
        assert client.list_prepared_transactions(timeout_s=10) == []


def _until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Wait for ``condition`` (a restarted process may take seconds to import on a loaded machine)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_undecided_transaction_waits_for_the_decision(
    tmp_path: Path, stage: Stage, processes: list[ParticipantProcess]
) -> None:
    decisions = {("job", 0): PREPARING}
    with running_coordinator(decisions) as (coordinator, port):
        config = write_config(
            tmp_path / "participant.toml",
            coordinator=f"127.0.0.1:{port}",
            sinks=[{"name": "sqlite", "kind": "sqlite", "options": {"path": str(tmp_path / "sink.db")}}],
        )
        participant = ParticipantProcess(config, tmp_path)
        processes.append(participant.start())
        _prepare(participant, "sqlite", "job", 0, stage("job", 0, [row("a", 1)]))
        participant.kill()

        asked_before = len(coordinator.asked)
        participant.start()
        _until(lambda: len(coordinator.asked) > asked_before, "the restarted participant to ask for the outcome")
        assert not participant.is_ready(), "a PREPARING transaction has no decision yet"
        decisions[("job", 0)] = COMMITTED
        participant.wait_ready()
        assert len(coordinator.asked) >= 2
    assert _sqlite_results(tmp_path / "sink.db") == [(W0, "a", 1)]


def test_kafka_sink_redoes_a_committed_batch_after_kill_9(
    tmp_path: Path, broker: EmbeddedBroker, stage: Stage, processes: list[ParticipantProcess]
) -> None:
    with running_coordinator({("job", 1): COMMITTED}) as (_, port):
        config = write_config(
            tmp_path / "participant.toml",
            coordinator=f"127.0.0.1:{port}",
            sinks=[
                {
                    "name": "kafka",
                    "kind": "kafka",
                    "options": {
                        "state_dir": str(tmp_path / "kafka-state"),
                        "kafka": {"bootstrap_servers": broker.bootstrap_servers},
                    },
                }
            ],
        )
        participant = ParticipantProcess(config, tmp_path)
        processes.append(participant.start())
        first = stage("job", 0, [row("a", 1)])
        _prepare(participant, "kafka", "job", 0, first)
        with participant.client() as client:
            client.commit_prepared_transaction("kafka", TransactionId("job", 0), [], timeout_s=30)
        _prepare(
            participant,
            "kafka",
            "job",
            1,
            stage("job", 1, [row("b", 2), row("c", 3)]),
        )
        participant.kill()

        participant.start()
        participant.wait_ready()
    records = read_topic(broker.bootstrap_servers, SINK_TOPIC, idle_timeout=0.5)
    counts = sorted((v["ip"], v["count"]) for v in (IP_COUNT_SERDE.decode(r.value or b"") for r in records))
    assert counts == [("a", 1), ("b", 2), ("c", 3)], "batch 1 redone from staging exactly once"
