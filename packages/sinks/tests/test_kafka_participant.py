"""The Kafka topic participant against the real embedded broker (transactions, read_committed)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.contract import CommittedBatches, Resolution, TransactionId
from onceflow.core.avro import IP_COUNT_SERDE
from onceflow.core.kafka import transactional_producer_config
from onceflow.core.logging import record_fields
from onceflow.core.settings import KafkaSettings
from onceflow.core.topics import SINK_COMMITS_TOPIC, SINK_TOPIC
from onceflow.sinks.exceptions import TransactionAlreadyCommitted
from onceflow.sinks.kafka import KafkaParticipant
from onceflow.sinks.kafka import participant as kafka_participant
from onceflow.testing.broker.clients import ConsumedRecord, read_topic

from .conftest import W0, W1, Stage, bound, row


def _rows(broker: EmbeddedBroker) -> list[tuple[str, int, int]]:
    records = read_topic(broker.bootstrap_servers, SINK_TOPIC, idle_timeout=0.5)
    decoded = []
    for record in records:
        assert record.value is not None and record.key is not None
        value = IP_COUNT_SERDE.decode(record.value)
        assert record.key == value["ip"].encode()
        decoded.append((value["ip"], value["window_start"], value["count"]))
    return decoded


def _timestamps(broker: EmbeddedBroker) -> list[int]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "timestamps",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.assign([TopicPartition(SINK_TOPIC, 0, 0)])
        found: list[int] = []
        deadline = time.monotonic() + 30
        while len(found) < 3 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                found.append(message.timestamp()[1])
        return found
    finally:
        consumer.close()


def _markers(broker: EmbeddedBroker) -> list[ConsumedRecord]:
    return read_topic(broker.bootstrap_servers, SINK_COMMITS_TOPIC, idle_timeout=0.5)


OpenSink = Callable[..., KafkaParticipant]


@pytest.fixture
def open_sink(broker: EmbeddedBroker, tmp_path: Path) -> Iterator[OpenSink]:
    """``open_sink(name="kafka")``: a participant on the test broker; every one opened shares one state dir."""
    opened: list[KafkaParticipant] = []

    def open_(name: str = "kafka") -> KafkaParticipant:
        settings = KafkaSettings(bootstrap_servers=broker.bootstrap_servers)
        sink = KafkaParticipant(name, settings, state_dir=tmp_path / "state", timeout_s=30)
        opened.append(sink)
        return sink

    yield open_
    for sink in opened:
        sink.close()


def test_prepare_commit_abort(open_sink: OpenSink, broker: EmbeddedBroker, stage: Stage) -> None:
    started_ms = time.time() * 1000
    sink = open_sink()
    txn = TransactionId("job", 0)
    vote = sink.prepare(
        txn, stage("job", 0, [row("10.0.0.1", 3), row("10.0.0.2", 1)], [row("10.0.0.1", 2, W1)]), bound(sink)
    )
    assert (vote.vote_commit, vote.rows) == (True, 3)
    assert sink.list_prepared() == [txn]
    assert _rows(broker) == [], "read_committed sees nothing before commit"

    sink.commit(txn)
    sink.commit(txn)  # idempotent
    assert sorted(_rows(broker)) == [("10.0.0.1", W0, 3), ("10.0.0.1", W1, 2), ("10.0.0.2", W0, 1)]
    markers = _markers(broker)
    assert [(m.key, m.value) for m in markers] == [(b"kafka:job", b"0")]
    assert sink.list_prepared() == []
    assert sink.last_committed("job") == 0
    # the compacted markers keep the last batch only: every batch up to it counts as committed
    assert sink.committed_batches(None, 1000) == [CommittedBatches("job", 0, (0,), cumulative=True)]
    assert open_sink("other").committed_batches("job", 1000) == []

    aborted = TransactionId("job", 1)
    assert sink.prepare(aborted, stage("job", 1, [row("10.0.0.9", 9)]), bound(sink)).vote_commit
    sink.abort(aborted)
    sink.abort(aborted)
    assert len(_rows(broker)) == 3
    with pytest.raises(TransactionAlreadyCommitted):
        sink.abort(txn)

    stamps = _timestamps(broker)
    assert len(stamps) == 3 and all(started_ms <= t <= time.time() * 1000 for t in stamps), (
        "records carry the time they were produced, not their window (retention would drop old windows)"
    )


def test_one_open_transaction_per_sink_and_job(open_sink: OpenSink, stage: Stage) -> None:
    sink = open_sink()
    assert sink.prepare(TransactionId("job", 0), stage("job", 0, [row("a", 1)]), bound(sink)).vote_commit
    assert sink.prepare(TransactionId("job", 0), stage("job", 0, [row("a", 1)]), bound(sink)).vote_commit, (
        "re-prepare is a yes"
    )
    vote = sink.prepare(TransactionId("job", 1), stage("job", 1, [row("a", 2)]), bound(sink))
    assert not vote.vote_commit and "job:0 is still open" in vote.reason
    assert sink.prepare(TransactionId("other", 0), stage("other", 0, [row("a", 1)]), bound(sink)).vote_commit, (
        "other jobs are independent"
    )


def test_restarted_participant_redoes_a_committed_batch_from_staging_once(
    open_sink: OpenSink, broker: EmbeddedBroker, stage: Stage
) -> None:
    first = open_sink()
    first.prepare(TransactionId("job", 0), stage("job", 0, [row("a", 1)]), bound(first))
    first.commit(TransactionId("job", 0))
    first.prepare(TransactionId("job", 1), stage("job", 1, [row("a", 5), row("b", 1)]), bound(first))
    first.prepare(TransactionId("other", 0), stage("other", 0, [row("c", 1)]), bound(first))
    # The first participant "dies" with two open transactions: its successor fences it.

    second = open_sink()
    assert second.list_prepared() == [TransactionId("job", 1), TransactionId("other", 0)]
    decisions = {TransactionId("job", 1): Resolution.COMMIT, TransactionId("other", 0): Resolution.ABORT}
    assert second.recover(decisions.__getitem__) == decisions
    assert second.list_prepared() == []
    assert sorted(_rows(broker)) == [("a", W0, 1), ("a", W0, 5), ("b", W0, 1)]

    # The coordinator re-sends Commit (with the files): the marker makes the redo a no-op.
    second.commit(TransactionId("job", 1), stage("job", 1, [row("a", 5), row("b", 1)]), bound(second))
    third = open_sink()
    third.commit(TransactionId("job", 1), stage("job", 1, [row("a", 5), row("b", 1)]), bound(third))
    assert third.last_committed("job") == 1
    assert len(_rows(broker)) == 3
    assert sorted((m.key, m.value) for m in _markers(broker)) == [(b"kafka:job", b"0"), (b"kafka:job", b"1")]


def test_bad_staged_file_votes_no(open_sink: OpenSink, stage: Stage) -> None:
    (file,) = stage("job", 0, [row("a", 1)])
    Path(file.uri.removeprefix("file://")).unlink()
    sink = open_sink()
    vote = sink.prepare(TransactionId("job", 0), [file], bound(sink))
    assert not vote.vote_commit and file.uri in vote.reason


def test_a_journal_entry_that_cannot_be_written_leaves_nothing_prepared(
    open_sink: OpenSink, broker: EmbeddedBroker, stage: Stage, tmp_path: Path
) -> None:
    """The journal is written while the batch is produced: when it fails, the open Kafka transaction is
    aborted and the error raised, so there is no yes vote without the durable prepared state."""
    sink = open_sink()
    blocker = tmp_path / "state" / "kafka" / "prepared" / "job"
    blocker.write_text("a file where the job's journal directory belongs")
    txn = TransactionId("job", 0)
    files = stage("job", 0, [row("a", 1)])
    with pytest.raises(OSError):
        sink.prepare(txn, files, bound(sink))
    assert sink.list_prepared() == []

    blocker.unlink()
    assert sink.prepare(txn, files, bound(sink)).vote_commit, "the failed attempt left no transaction open"
    sink.commit(txn)
    assert _rows(broker) == [("a", W0, 1)]
    assert [(m.key, m.value) for m in _markers(broker)] == [(b"kafka:job", b"0")]


def test_preparing_the_bindings_opens_the_jobs_producer_before_the_first_prepare(
    open_sink: OpenSink, broker: EmbeddedBroker, stage: Stage, caplog: pytest.LogCaptureFixture
) -> None:
    """The producer's ``init_transactions`` (which fences a predecessor's producer) runs in the
    background once the job's bindings are prepared, overlapping the driver's first batch; the
    first prepare then finds it open."""
    caplog.set_level(logging.INFO)
    sink = open_sink()
    predecessor = Producer(
        transactional_producer_config({"bootstrap.servers": broker.bootstrap_servers}, sink.transactional_id("job"))
    )
    predecessor.init_transactions(30)
    predecessor.begin_transaction()
    predecessor.produce(SINK_TOPIC, key=b"10.0.0.66", value=b"a predecessor's record")
    predecessor.flush(30)

    sink.prepare_bindings("job", bound(sink))
    deadline = time.monotonic() + 60
    while not any(r.getMessage().startswith("kafka.producer_ready") for r in caplog.records):
        assert time.monotonic() < deadline, "the job's producer was not opened after its bindings were prepared"
        time.sleep(0.05)
    with pytest.raises(KafkaException) as fenced:
        predecessor.commit_transaction(30)
    assert fenced.value.args[0].fatal(), fenced.value  # fenced by the participant's init_transactions

    txn = TransactionId("job", 0)
    assert sink.prepare(txn, stage("job", 0, [row("10.0.0.1", 1)]), bound(sink)).vote_commit
    sink.commit(txn)
    assert _rows(broker) == [("10.0.0.1", W0, 1)], "the predecessor's open transaction was aborted"
    assert sum(r.getMessage().startswith("kafka.producer_ready") for r in caplog.records) == 1


def test_preparing_bindings_opens_no_producer_beyond_the_limit(
    open_sink: OpenSink, stage: Stage, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client preparing bindings for many jobs does not make the participant open a producer for
    each: beyond the limit a job's producer opens at its first prepare."""
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(kafka_participant, "WARM_UP_LIMIT", 1)
    sink = open_sink()

    def opened() -> list[str]:
        return [record_fields(r)["job"] for r in caplog.records if r.getMessage() == "kafka.producer_ready"]

    sink.prepare_bindings("first", bound(sink))
    deadline = time.monotonic() + 60
    while not opened():
        assert time.monotonic() < deadline, "the first job's producer was not opened"
        time.sleep(0.05)
    sink.prepare_bindings("second", bound(sink))
    assert not sink._warming, "a background open started beyond the limit"
    sink.close()
    assert opened() == ["first"]
    txn = TransactionId("second", 0)
    reopened = open_sink()
    assert reopened.prepare(txn, stage("second", 0, [row("10.0.0.1", 1)]), bound(reopened)).vote_commit
    assert opened() == ["first", "second"]
