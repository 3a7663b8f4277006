"""The IP-count job end to end in one driver: exact results in every sink, admission control, dead
letters, source transactions, fencing. Broker, coordinator and participants are real processes."""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from pyspark.sql import SparkSession

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.avro import ACCESS_EVENT_SERDE, AccessEvent
from onceflow.core.settings import load_settings
from onceflow.core.topics import DEAD_LETTER_TOPIC, SOURCE_TOPIC
from onceflow.ipcount.traffic.model import TrafficModel
from onceflow.sinks.server.settings import ParticipantSettings
from onceflow.spark.exceptions import WriterFencedError
from onceflow.spark.job.dead_letters import OFFSET_HEADER, REASON_HEADER
from onceflow.spark.job.settings import SparkJobSettings
from onceflow.spark.replay import audit_job, render
from onceflow.spark.runner import JobMetrics, ProgressListener, RestartLoop, start_query
from onceflow.testing.sinks.postgres import PostgresServer
from onceflow.testing.spark.input import encoded_events, produce_events

from .conftest import TEST_SPARK, job_settings
from .system import Key, SinkSystem, create_database, end_input, recent_model, truth

pytestmark = pytest.mark.slow

EVENTS = 20_000
MAX_OFFSETS = 4_000
GARBAGE = [b"not avro", b"\xc3\x01" + b"\x00" * 8 + b"unknown fingerprint", b""]


@dataclass
class Run:
    system: SinkSystem
    expected: dict[Key, int]
    progress: list[dict[str, Any]]
    metrics: JobMetrics
    garbage_offsets: int
    settings: SparkJobSettings


@pytest.fixture(scope="module")
def exact_run(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer
) -> Iterator[Run]:
    """One run of the job over EVENTS generated events with undecodable records among them."""
    work = tmp_path_factory.mktemp("exact")
    broker = EmbeddedBroker(work / "broker", 0).start()
    dsn = create_database(postgres_server.dsn(), f"spark_{uuid.uuid4().hex[:12]}")
    system = SinkSystem(broker, work / "system", dsn).start()
    try:
        model = recent_model(11)
        values = encoded_events(model, 0, EVENTS)
        for index, junk in enumerate(GARBAGE):
            values.insert(1000 + 5000 * index, junk)
        produce_events(broker.bootstrap_servers, values)
        # read 4,000 offsets a batch over two partitions: the input ends only in the batch that has all of it
        end_input(broker.bootstrap_servers)
        expected = truth(model, EVENTS)
        settings = job_settings(broker.bootstrap_servers, work, system, source={"max_offsets_per_trigger": MAX_OFFSETS})
        metrics = JobMetrics()
        listener = ProgressListener(settings.job, metrics)
        spark.streams.addListener(listener)
        query = start_query(spark, settings)
        try:
            system.wait_for_results(expected)
            progress = [dict(p) for p in query.recentProgress]
        finally:
            query.stop()
            spark.streams.removeListener(listener)
        yield Run(system, expected, progress, metrics, len(GARBAGE), settings)
    finally:
        system.stop()
        broker.stop()


def test_every_sink_equals_the_ground_truth(exact_run: Run) -> None:
    exact_run.system.wait_exact(exact_run.expected)


def test_the_replay_audit_is_exact_and_finds_a_deleted_row(spark: SparkSession, exact_run: Run) -> None:
    """Steps:
    1. Replay the job's query as a batch over its checkpoint's micro-batches: every sink (the
       participants' default IP-count bindings) is EXACT, and they agree with one another.
    2. Delete one row from the SQLite table: that sink is DIFFERENT with that row missing, the
       others stay EXACT, and the sinks of the output no longer agree.
    3. Put the row back: EXACT again.
    """
    system = exact_run.system
    exact_run.system.wait_exact(exact_run.expected)
    participant = load_settings(ParticipantSettings, system.work_dir / "participant.toml")
    # Step 1
    audit = audit_job(spark, exact_run.settings, participant)
    report = render([audit])
    assert audit.exact, report
    assert {b.binding.sink for b in audit.bindings} == {"kafka", "sqlite", "postgres"}, report
    assert all(b.comparison is not None and b.comparison.matching == len(exact_run.expected) for b in audit.bindings)
    assert audit.agreement == {"results": True}, report
    assert audit.replay.behind_watermark is not None, "the IP-count job's watermark is not tracked"
    assert report.endswith("verdict: EXACT\n")
    # Step 2
    with sqlite3.connect(system.sqlite_path) as db:
        removed = db.execute("SELECT window_start, window_end, ip, count FROM ip_counts LIMIT 1").fetchone()
        db.execute("DELETE FROM ip_counts WHERE window_start = ? AND ip = ?", (removed[0], removed[2]))
    try:
        audit = audit_job(spark, exact_run.settings, participant)
        report = render([audit])
        verdicts = {b.binding.sink: b.exact for b in audit.bindings}
        assert verdicts == {"kafka": True, "sqlite": False, "postgres": True}, report
        (sqlite,) = [b for b in audit.bindings if b.binding.sink == "sqlite"]
        assert sqlite.comparison is not None and sqlite.comparison.missing == 1, report
        assert f"ip={removed[2]!r}" in report and "DIFFERENT" in report, report
        assert audit.agreement == {"results": False}, report
        assert report.endswith("verdict: DIFFERENT\n")
    finally:
        # Step 3
        with sqlite3.connect(system.sqlite_path) as db:
            db.execute("INSERT INTO ip_counts VALUES (?, ?, ?, ?)", removed)
    assert audit_job(spark, exact_run.settings, participant).exact


def test_max_offsets_per_trigger_is_respected(exact_run: Run) -> None:
    batches = [p for p in exact_run.progress if p["numInputRows"] > 0]
    assert len(batches) >= EVENTS // MAX_OFFSETS
    for progress in batches:
        source = progress["sources"][0]
        start, end = _offsets(source["startOffset"]), _offsets(source["endOffset"])
        admitted = sum(end[p] - start.get(p, 0) for p in end)  # batch 0 starts at the earliest (0)
        assert 0 < admitted <= MAX_OFFSETS, progress["batchId"]
        assert progress["numInputRows"] <= MAX_OFFSETS


def test_undecodable_records_go_to_the_dead_letter_topic_with_the_reason(exact_run: Run) -> None:
    letters = _read_with_headers(exact_run.system.broker.bootstrap_servers, DEAD_LETTER_TOPIC)
    by_offset = {headers[OFFSET_HEADER]: (value, headers) for value, headers in letters}
    assert len(by_offset) == exact_run.garbage_offsets, "one dead letter per undecodable record (replays dedup)"
    reasons = sorted(headers[REASON_HEADER].decode() for _, headers in by_offset.values())
    assert any("UnknownSchema" in reason for reason in reasons)
    assert any("CorruptRecord" in reason for reason in reasons)
    assert {value or b"" for value, _ in by_offset.values()} == set(GARBAGE), "the original bytes are kept"


def test_processed_offsets_are_committed_to_the_monitoring_group(exact_run: Run) -> None:
    bootstrap = exact_run.system.broker.bootstrap_servers
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "onceflow-spark-ipcount"})
    try:
        committed = consumer.committed([TopicPartition(SOURCE_TOPIC, p) for p in (0, 1)], timeout=30)
    finally:
        consumer.close()
    assert {tp.partition: tp.offset for tp in committed} == _end_offsets(bootstrap), "lag is zero once all is read"


def test_progress_reaches_the_metrics(exact_run: Run) -> None:
    registry = exact_run.metrics.metrics.registry
    input_rows = registry.get_sample_value("onceflow_spark_input_rows_total", {"job": "ipcount"})
    # The source decodes in the task that reads (onceflow.spark.source.decoded): an undecodable record is
    # a dead letter there, never a row of the stream (the dead-letter test counts them). Plus one
    # end-of-input row per partition whose marker came in a batch that read the whole input.
    assert input_rows is not None
    assert EVENTS + 1 <= input_rows <= EVENTS + 2
    assert registry.get_sample_value("onceflow_spark_watermark_seconds", {"job": "ipcount"})
    assert registry.get_sample_value("onceflow_spark_rows_dropped_by_watermark_total", {"job": "ipcount"}) == 0


def test_records_of_aborted_and_open_source_transactions_are_never_counted(
    spark: SparkSession, broker: EmbeddedBroker, system: SinkSystem, tmp_path: Path
) -> None:
    model = recent_model(5)
    half = 3_000
    bootstrap = broker.bootstrap_servers
    produce_events(bootstrap, encoded_events(model, 0, half))
    # A transaction that stays open (events of ip 7.7.7.7 in real windows), then more committed data
    # and an aborted transaction (ip 6.6.6.6) behind it.
    open_txn = _stray_transaction(bootstrap, "7.7.7.7", model)
    lso = _end_offsets(bootstrap)
    produce_events(bootstrap, encoded_events(model, half, 2 * half))
    aborted = _stray_transaction(bootstrap, "6.6.6.6", model)
    aborted.abort_transaction(30)
    query = start_query(spark, job_settings(bootstrap, tmp_path, system))
    try:
        _wait_for_batches(query, 3)
        for progress in query.recentProgress:
            end = _offsets(progress["sources"][0]["endOffset"])
            assert all(end[p] <= lso[p] for p in end), "a batch passed the last stable offset"
        open_txn.abort_transaction(30)
        end_input(bootstrap)
        expected = truth(model, 2 * half)
        system.wait_for_results(expected)
    finally:
        query.stop()
    system.wait_exact(expected)


def test_update_mode_emits_changes_and_the_sinks_upsert_to_the_final_counts(
    spark: SparkSession, broker: EmbeddedBroker, system: SinkSystem, tmp_path: Path
) -> None:
    model = recent_model(13)
    events = 4_000
    produce_events(broker.bootstrap_servers, encoded_events(model, 0, events))
    end_input(broker.bootstrap_servers)
    expected = truth(model, events)
    settings = job_settings(
        broker.bootstrap_servers,
        tmp_path,
        system,
        output_mode="update",
        source={"max_offsets_per_trigger": 1_000},
        spark={**TEST_SPARK, "query_name": "update-mode"},
    )
    # Its checkpoint is what a driver killed during the first offset-log write leaves, which Spark
    # refuses to start from; start_query removes the leftover (test_checkpoint_leftovers.py).
    leftover = Path(settings.checkpoint_location) / "offsets" / f".0.{uuid.uuid4()}.tmp"
    leftover.parent.mkdir(parents=True)
    leftover.write_text("v1\n")
    query = start_query(spark, settings)
    try:
        system.wait_exact(expected, latest_wins=True, timeout=180)
    finally:
        query.stop()


def test_a_second_driver_fences_the_first(
    spark: SparkSession, broker: EmbeddedBroker, system: SinkSystem, tmp_path: Path
) -> None:
    model = recent_model(9)
    bootstrap = broker.bootstrap_servers
    produce_events(bootstrap, encoded_events(model, 0, 2_000))
    first = job_settings(bootstrap, tmp_path / "first", system, restart={"attempts": 3, "delay_ms": 0})
    loop = RestartLoop(first.job, first.restart.attempts, 0)
    outcome: list[BaseException | None] = []
    queries: list[Any] = []

    def start_first() -> Any:
        queries.append(start_query(spark, first))
        return queries[-1]

    def run_first() -> None:
        try:
            loop.run(start_first)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run_first, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not queries or not queries[0].recentProgress:
        assert time.monotonic() < deadline and thread.is_alive(), outcome
        time.sleep(0.2)
    second_settings = job_settings(
        bootstrap, tmp_path / "second", system, spark={**TEST_SPARK, "query_name": "second-driver"}
    )
    second = start_query(spark, second_settings)
    try:
        produce_events(bootstrap, encoded_events(model, 2_000, 4_000))
        thread.join(120)
        assert not thread.is_alive(), "the fenced driver kept running"
        assert len(queries) == 1, "a fenced driver must not restart"
        assert isinstance(outcome[0], WriterFencedError), outcome
        assert "another driver owns the job" in str(outcome[0])
    finally:
        loop.stop()
        second.stop()


# --- helpers -----------------------------------------------------------------------------------------


def _offsets(raw: Any) -> dict[int, int]:
    import json

    doc = json.loads(raw) if isinstance(raw, str) else raw
    if not doc:
        return {}
    return {int(p): int(o) for p, o in doc[SOURCE_TOPIC].items()}


def _stray_transaction(bootstrap: str, ip: str, model: TrafficModel) -> Producer:
    """An open transaction holding 50 events of ``ip`` (in the model's real windows) on both partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": uuid.uuid4().hex})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(50):
        stray = AccessEvent(
            event_time=model.start_ms + 100 * i, ip=ip, method="GET", path="/", status=200, bytes=1, user_agent="x"
        )
        producer.produce(SOURCE_TOPIC, value=ACCESS_EVENT_SERDE.encode(stray), partition=i % 2)
    producer.flush(30)
    return producer


def _end_offsets(bootstrap: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe", "isolation.level": "read_committed"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(SOURCE_TOPIC, p), timeout=30)[1] for p in (0, 1)}
    finally:
        consumer.close()


def _wait_for_batches(query: Any, count: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(query.recentProgress) < count:
        assert time.monotonic() < deadline, f"query made {len(query.recentProgress)} batches; {query.exception()}"
        time.sleep(0.2)


def _read_with_headers(bootstrap: str, topic: str, timeout: float = 60) -> list[tuple[bytes | None, dict[str, bytes]]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    records: list[tuple[bytes | None, dict[str, bytes]]] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                break
            raw_headers: list[tuple[str, bytes]] = list(message.headers() or [])  # type: ignore[arg-type]
            headers = {key: value or b"" for key, value in raw_headers}
            records.append((message.value(), headers))
        return records
    finally:
        consumer.close()
