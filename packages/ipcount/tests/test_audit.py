"""The audit against real sinks (the SQLite, PostgreSQL and Kafka participants, committed through
their two-phase commit), with generator truth and with truth recounted from the source topic."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from confluent_kafka import Producer

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.cli.app import main as onceflow
from onceflow.contract import TransactionId
from onceflow.contract.staging import StagingWriter
from onceflow.core.avro import IP_COUNT_SERDE, IpCount
from onceflow.core.settings import KafkaSettings
from onceflow.ipcount.audit import (
    DifferenceKind,
    KafkaTopicReader,
    SqliteTableReader,
    generator_model,
    generator_truth,
    run_audit,
    source_topic_truth,
)
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA, ip_count_table_binding, ip_count_topic_binding
from onceflow.ipcount.traffic import event, expected_counts
from onceflow.logproducer.encoding import AccessEventEncoder
from onceflow.sinks.base import SinkParticipant
from onceflow.sinks.kafka import KafkaParticipant
from onceflow.sinks.postgres import PostgresParticipant
from onceflow.sinks.sqlite import SqliteParticipant
from onceflow.testing.broker.clients import produce_acked

SEED, COUNT = 11, 6_000
#: 200 events per second of event time: 30 s, six 5 s windows; 40 ips.
GENERATOR = {"ips": "40", "event.time.rate": "200"}


@dataclass
class Pipeline:
    bootstrap: str
    source_topic: str
    sink_topic: str
    sqlite_path: Path
    postgres_dsn: str

    def sink_flags(self) -> list[str]:
        return [
            "--bootstrap-servers", self.bootstrap, "--kafka-sink", self.sink_topic,
            "--sqlite-sink", str(self.sqlite_path), "--postgres-sink", self.postgres_dsn,
        ]  # fmt: skip


def write_source_topic(bootstrap: str, topic: str) -> None:
    """The generator's first COUNT events, with its event builder, in committed transactions; an
    aborted transaction of extra events, and one undecodable record (a dead letter)."""
    model = generator_model(SEED, GENERATOR)
    encoder = AccessEventEncoder()
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"src-{uuid.uuid4().hex[:6]}"})
    producer.init_transactions(30)
    for start in range(0, COUNT, 2_000):
        producer.begin_transaction()
        for i in range(start, min(start + 2_000, COUNT)):
            e = event(model, i)
            producer.produce(topic, key=e["ip"].encode(), value=encoder.encode(e), timestamp=e["event_time"])
        producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(100):
        e = event(model, i)
        producer.produce(topic, key=e["ip"].encode(), value=encoder.encode(e))
    producer.flush(30)
    producer.abort_transaction(30)
    produce_acked(bootstrap, topic, [b"\x00garbage"])


def commit_to_sinks(rows: list[IpCount], participants: list[SinkParticipant], staging: Path) -> None:
    """Two batches through each participant's prepare/commit, as the coordinator drives them (with the
    job's binding of each sink: the IP-count results' topic or table)."""
    half = len(rows) // 2
    for batch, part in enumerate((rows[:half], rows[half:])):
        files = [StagingWriter(str(staging), "ipcount", batch).write("part-0", part, IP_COUNT_ARROW_SCHEMA)]
        for participant in participants:
            txn = TransactionId("ipcount", batch)
            bindings = [
                ip_count_topic_binding(participant.name, participant.topic)
                if isinstance(participant, KafkaParticipant)
                else ip_count_table_binding(participant.name)
            ]
            assert participant.prepare(txn, files, bindings).vote_commit
            participant.commit(txn, files, bindings)


@pytest.fixture
def pipeline(broker: EmbeddedBroker, tmp_path: Path, postgres_dsn: str) -> Iterator[Pipeline]:
    bootstrap = broker.bootstrap_servers
    source_topic, sink_topic = f"ip_count_source_{uuid.uuid4().hex[:6]}", f"ip_count_sink_{uuid.uuid4().hex[:6]}"
    write_source_topic(bootstrap, source_topic)
    # The "job": count the events per window and ip (the truth function), into every sink.
    model = generator_model(SEED, GENERATOR)
    rows = [
        IpCount(window_start=r.window_start, window_end=r.window_end, ip=r.ip, count=r.count)
        for r in expected_counts(model, COUNT)
    ]
    kafka = KafkaSettings(bootstrap_servers=bootstrap)
    participants: list[SinkParticipant] = [
        SqliteParticipant("sqlite", tmp_path / "sink.db"),
        PostgresParticipant("postgres", postgres_dsn),
        KafkaParticipant("kafka", kafka, state_dir=tmp_path / "kafka-state", topic=sink_topic,
                         commits_topic=f"_onceflow_sink_commits_{uuid.uuid4().hex[:6]}"),
    ]  # fmt: skip
    try:
        commit_to_sinks(rows, participants, tmp_path / "staging")
    finally:
        for participant in participants:
            participant.close()
    yield Pipeline(bootstrap, source_topic, sink_topic, tmp_path / "sink.db", postgres_dsn)


def test_every_sink_is_exact_against_generator_and_source_topic_truth(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    generator = ["audit", "--seed", str(SEED), "--count", str(COUNT), "-c", "ips=40", "-c", "event.time.rate=200"]
    assert onceflow([*generator, *pipeline.sink_flags()]) == 0
    out = capsys.readouterr().out
    for sink in ("kafka", "sqlite", "postgres"):
        assert f"sink {sink}: EXACT" in out
    assert "overall: EXACT (3 sinks)" in out

    # Source-topic truth: the committed events only (the aborted ones and the dead letter are not counted).
    assert onceflow(["audit", "--source-topic", pipeline.source_topic, "--no-closed-only", *pipeline.sink_flags()]) == 0
    out = capsys.readouterr().out
    assert f"truth: topic {pipeline.source_topic} (read_committed): {COUNT} events, 1 dead letters" in out
    assert "overall: EXACT" in out
    # Live-run default: only closed windows (the last two are still open: end + 5 s > newest event time).
    assert onceflow(["audit", "--source-topic", pipeline.source_topic, *pipeline.sink_flags()]) == 0
    out = capsys.readouterr().out
    assert "closed windows only" in out and "overall: EXACT" in out

    kafka = KafkaSettings(bootstrap_servers=pipeline.bootstrap)
    truth = source_topic_truth(kafka, pipeline.source_topic)
    assert truth.counts == generator_truth(generator_model(SEED, GENERATOR), COUNT).counts
    closed = run_audit(truth, [KafkaTopicReader("kafka", kafka, pipeline.sink_topic)], closed_only=True)
    windows = {start for start, _ in truth.counts}
    assert closed.exact and 0 < closed.sinks[0].windows_expected < len(truth.counts)
    assert truth.max_event_time is not None and closed.closed_end_limit == truth.max_event_time - 5_000
    assert len(windows) == 7  # 30 s of events; disorder reaches into the window before the start


def test_the_audit_reports_a_deleted_row_a_duplicated_row_and_a_changed_count(
    pipeline: Pipeline, capsys: pytest.CaptureFixture[str]
) -> None:
    truth = generator_truth(generator_model(SEED, GENERATOR), COUNT)
    (w_deleted, ip_deleted), (w_dup, ip_dup), (w_changed, ip_changed) = sorted(truth.counts)[5:8]
    # SQLite sink: a row deleted.
    with sqlite3.connect(pipeline.sqlite_path) as db:
        db.execute("DELETE FROM ip_counts WHERE window_start = ? AND ip = ?", (w_deleted, ip_deleted))
    # PostgreSQL sink: a row duplicated (the table lost its primary key).
    with psycopg.connect(pipeline.postgres_dsn, autocommit=True) as conn:
        conn.execute("ALTER TABLE ip_counts DROP CONSTRAINT ip_counts_pkey")
        conn.execute(
            "INSERT INTO ip_counts SELECT * FROM ip_counts WHERE window_start = %s AND ip = %s", (w_dup, ip_dup)
        )
    # Kafka sink: a committed record that changes one count (the latest record per key wins).
    changed = IpCount(window_start=w_changed, window_end=w_changed + 5000, ip=ip_changed,
                      count=truth.counts[(w_changed, ip_changed)] + 1)  # fmt: skip
    produce_acked(pipeline.bootstrap, pipeline.sink_topic, [IP_COUNT_SERDE.encode(changed)])

    code = onceflow(["audit", "--seed", str(SEED), "--count", str(COUNT), "-c", "ips=40", "-c",
                     "event.time.rate=200", *pipeline.sink_flags()])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1, out
    expected_rows = len(truth.counts)
    lines = out.splitlines()
    assert (
        f"sink sqlite: windows expected {expected_rows}, matched {expected_rows - 1}, missing 1, extra 0, "
        f"count mismatches 0, duplicated 0" in lines
    )
    deleted = truth.counts[(w_deleted, ip_deleted)]
    assert f"    missing   window_start={w_deleted} ip={ip_deleted} expected={deleted} actual=-" in lines
    n = truth.counts[(w_dup, ip_dup)]
    assert f"    duplicate window_start={w_dup} ip={ip_dup} expected={n} actual=2 rows: {n}, {n}" in lines
    assert (
        f"    mismatch  window_start={w_changed} ip={ip_changed} expected={changed['count'] - 1} "
        f"actual={changed['count']}" in lines
    )
    for sink in ("kafka", "sqlite", "postgres"):
        assert f"sink {sink}: DIFFERENT" in lines
    assert lines[-1] == "overall: DIFFERENT (3 of 3 sinks differ)"

    # The library says the same, per sink.
    report = run_audit(truth, [SqliteTableReader("sqlite", pipeline.sqlite_path)])
    (sqlite,) = report.sinks
    assert (sqlite.missing, sqlite.extra, sqlite.mismatched, sqlite.duplicated) == (1, 0, 0, 0)
    assert [(d.kind, d.window_start, d.ip) for d in sqlite.examples] == [
        (DifferenceKind.MISSING, w_deleted, ip_deleted)
    ]


def test_unreadable_sinks_and_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = onceflow(["audit", "--seed", "1", "--count", "100", "--sqlite-sink", str(tmp_path / "nope.db")])
    out = capsys.readouterr().out
    assert code == 1
    assert "sink sqlite: cannot read" in out and "sink sqlite: DIFFERENT" in out
    assert onceflow(["audit", "--seed", "1", "--sqlite-sink", str(tmp_path / "x.db")]) == 2  # no --count
    assert "--count" in capsys.readouterr().err
    assert onceflow(["audit", "--seed", "1", "--count", "10"]) == 2  # no sinks
    assert onceflow(["audit", "--seed", "1", "--count", "10", "-c", "ips=0", "--sqlite-sink", "x"]) == 2
