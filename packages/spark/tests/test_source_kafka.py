"""The onceflow-kafka source against a real broker: exact ranges under read_committed, the LSO bound,
admission control, new partitions and data loss. No Spark: the reader's methods are called as Spark does."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core.end_of_input import EndOfInputMarker
from onceflow.runtime.worker.end_of_input import write_end_of_input
from onceflow.spark.exceptions import OffsetsOutOfRange
from onceflow.spark.source import KafkaStreamReader, OffsetRange, parse_source_options, read_range
from onceflow.spark.source import ranges as ranges_module
from onceflow.testing.broker.clients import create_topic, produce_acked

TOPIC = "events"


def _reader(broker: EmbeddedBroker, tmp_path: Path | None = None, **options: str) -> KafkaStreamReader:
    parsed = parse_source_options({"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": TOPIC, **options})
    return KafkaStreamReader(parsed, str(tmp_path / "initial.json") if tmp_path else "")


def _values(reader: KafkaStreamReader, start: dict[str, object], end: dict[str, object]) -> list[bytes]:
    values: list[bytes] = []
    for task in reader.partitions(start, end):
        for batch in reader.read(task):
            values.extend(batch.column("value").to_pylist())
    return values


def _transactional(broker: EmbeddedBroker) -> Producer:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": uuid.uuid4().hex})
    producer.init_transactions(30)
    return producer


def _in_txn(producer: Producer, values: list[bytes], *, commit: bool, partition: int = 0) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(TOPIC, value=value, partition=partition)
    producer.flush(30)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


@pytest.fixture
def reader_factory(broker: EmbeddedBroker) -> Iterator[Callable[..., KafkaStreamReader]]:
    readers: list[KafkaStreamReader] = []

    def make(**options: str) -> KafkaStreamReader:
        readers.append(_reader(broker, None, **options))
        return readers[-1]

    yield make
    for reader in readers:
        reader.stop()


def test_ranges_skip_aborted_data_and_control_records_and_stop_at_the_lso(
    broker: EmbeddedBroker, reader_factory: Callable[..., KafkaStreamReader]
) -> None:
    create_topic(broker.bootstrap_servers, TOPIC, partitions=1)
    producer = _transactional(broker)
    _in_txn(producer, [b"c1", b"c2"], commit=True)
    _in_txn(producer, [b"a1", b"a2"], commit=False)
    _in_txn(producer, [b"c3"], commit=True)
    _in_txn(producer, [b"a3"], commit=False)  # aborted data and its marker end the range
    other = _transactional(broker)
    other.begin_transaction()
    other.produce(TOPIC, value=b"open", partition=0)
    other.flush(30)  # still open: the LSO stops here
    produce_acked(broker.bootstrap_servers, TOPIC, [b"after-open"], partition=0)

    reader = reader_factory()
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end == {TOPIC: {"0": 10}}, "end is the LSO: the first offset of the open transaction"
    assert _values(reader, start, end) == [b"c1", b"c2", b"c3"]

    other.commit_transaction(30)
    later = reader.latestOffset(end, ReadAllAvailable())
    assert _values(reader, end, later) == [b"open", b"after-open"]
    # a replay of the first range reads exactly the same records
    assert _values(reader, start, end) == [b"c1", b"c2", b"c3"]


def test_a_range_is_read_with_partition_eof_and_without_librdkafkas_second_long_fetch_pause(
    broker: EmbeddedBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings that made a 250,000-record range take 1.3 s instead of 0.2 s (docs/benchmarks.md)."""
    create_topic(broker.bootstrap_servers, TOPIC, partitions=1)
    produce_acked(broker.bootstrap_servers, TOPIC, [b"v%d" % i for i in range(50)], partition=0)
    configs: list[dict[str, object]] = []

    class RecordingConsumer(ranges_module.Consumer):  # type: ignore[misc, name-defined]
        def __init__(self, config: dict[str, object]) -> None:
            configs.append(dict(config))
            super().__init__(config)

    monkeypatch.setattr(ranges_module, "Consumer", RecordingConsumer)
    options = parse_source_options(
        {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": TOPIC, "kafka.queued.min.messages": "10"}
    )

    batches = list(read_range(options, OffsetRange(TOPIC, 0, 0, 50)))

    assert [v for b in batches for v in b.column("value").to_pylist()] == [b"v%d" % i for i in range(50)]
    [config] = configs
    assert config["fetch.queue.backoff.ms"] == 10, "librdkafka's 1000 ms default idles a fast reader"
    assert config["enable.partition.eof"] is True, "the last call returns at the partition's end, not on its timeout"
    assert config["queued.min.messages"] == "10", "a user's client setting still reaches the consumer"


def test_latest_offset_admits_at_most_max_offsets_per_trigger(
    broker: EmbeddedBroker, reader_factory: Callable[..., KafkaStreamReader]
) -> None:
    create_topic(broker.bootstrap_servers, TOPIC, partitions=2)
    produce_acked(broker.bootstrap_servers, TOPIC, [b"x"] * 300, partition=0)
    produce_acked(broker.bootstrap_servers, TOPIC, [b"y"] * 100, partition=1)
    reader = reader_factory(maxOffsetsPerTrigger="100")
    limit = reader.getDefaultReadLimit()
    assert limit == ReadMaxRows(100)
    start = reader.initialOffset()
    seen = 0
    while True:
        end = reader.latestOffset(start, limit)
        if end == start:
            break
        admitted = sum(end[TOPIC][p] - start[TOPIC][p] for p in end[TOPIC])
        assert 0 < admitted <= 100
        seen += len(_values(reader, start, end))
        start = end
    assert seen == 400
    # Spark may still ask for everything (e.g. Trigger.AvailableNow): the given limit wins
    assert reader.latestOffset(reader.initialOffset(), ReadAllAvailable()) == {TOPIC: {"0": 300, "1": 100}}


def test_new_partitions_join_at_their_earliest_offset(
    broker: EmbeddedBroker, reader_factory: Callable[..., KafkaStreamReader]
) -> None:
    create_topic(broker.bootstrap_servers, TOPIC, partitions=2)
    produce_acked(broker.bootstrap_servers, TOPIC, [b"p0"] * 3, partition=0)
    produce_acked(broker.bootstrap_servers, TOPIC, [b"p1"] * 2, partition=1)
    reader = reader_factory()
    checkpointed = {TOPIC: {"0": 1}}  # an offset logged before partition 1 existed
    end = reader.latestOffset(checkpointed, ReadAllAvailable())
    assert end == {TOPIC: {"0": 3, "1": 0}}, "the new partition joins with an empty range"
    assert [t.value for t in reader.partitions(checkpointed, end)] == [f"{TOPIC}-0[1,3)"]
    produce_acked(broker.bootstrap_servers, TOPIC, [b"p1"], partition=1)
    later = reader.latestOffset(end, ReadAllAvailable())
    assert _values(reader, end, later) == [b"p1"] * 3


def test_initial_offsets_are_resolved_once_and_kept(
    broker: EmbeddedBroker, tmp_path: Path, reader_factory: Callable[..., KafkaStreamReader]
) -> None:
    create_topic(broker.bootstrap_servers, TOPIC, partitions=1)
    produce_acked(broker.bootstrap_servers, TOPIC, [b"old"] * 5, partition=0)
    first = _reader(broker, tmp_path, startingOffsets="latest")
    assert first.initialOffset() == {TOPIC: {"0": 5}}
    produce_acked(broker.bootstrap_servers, TOPIC, [b"new"] * 2, partition=0)
    again = _reader(broker, tmp_path, startingOffsets="latest")  # the driver restarted before batch 0 committed
    assert again.initialOffset() == {TOPIC: {"0": 5}}
    first.stop()
    again.stop()
    assert reader_factory(startingOffsets='{"events": {"0": 2}}').initialOffset() == {TOPIC: {"0": 2}}


def test_deleted_offsets_fail_the_read_naming_the_topic_partition_unless_data_loss_is_allowed(
    broker_factory: Callable[..., EmbeddedBroker],
) -> None:
    broker = broker_factory(maintenance_interval_ms=200)
    create_topic(
        broker.bootstrap_servers, TOPIC, partitions=1, config={"segment.bytes": "2000", "retention.bytes": "2000"}
    )
    produce_acked(broker.bootstrap_servers, TOPIC, [b"v" * 100] * 100, partition=0, config={"batch.num.messages": 5})
    reader = _reader(broker)
    # Retention deletes a few segments per pass: wait until it has deleted some and then stopped (the log
    # start unchanged over ten passes), or the lenient read below races the next deletion.
    deadline = time.monotonic() + 60
    seen: list[int] = []
    while len(seen) < 10 or seen[-1] == 0 or len(set(seen[-10:])) > 1:
        assert time.monotonic() < deadline, f"retention did not settle: log start offsets {seen[-10:]}"
        seen.append(reader.probe.bounds(0)[0])
        time.sleep(0.2)
    earliest = seen[-1]
    task = OffsetRange(TOPIC, 0, 0, 100)
    with pytest.raises(OffsetsOutOfRange, match=f"topic-partition {TOPIC}-0: offset 0 is out of range"):
        list(read_range(reader.options, task))
    lenient = _reader(broker, failOnDataLoss="false")
    rows = sum(batch.num_rows for batch in read_range(lenient.options, task))
    assert rows == 100 - earliest
    reader.stop()
    lenient.stop()


def test_an_end_of_input_marker_ends_the_input_only_in_a_batch_that_read_all_of_it(broker: EmbeddedBroker) -> None:
    create_topic(broker.bootstrap_servers, TOPIC, partitions=2)
    for partition in (0, 1):
        produce_acked(broker.bootstrap_servers, TOPIC, [b"e%d" % i for i in range(10)], partition=partition)
    ends = write_end_of_input({"bootstrap.servers": broker.bootstrap_servers}, TOPIC, "test")
    assert ends == {0: 10, 1: 10}
    reader = _reader(broker)
    latest = reader.probe.all_bounds()

    def rows(partition: int, batch_end: dict[int, int]) -> list[tuple[bytes | None, bool]]:
        task = OffsetRange(TOPIC, partition, 0, batch_end[partition], batch_end)
        found: list[tuple[bytes | None, bool]] = []
        for batch in read_range(reader.options, task):
            found += zip(batch.column("value").to_pylist(), batch.column("end_of_input").to_pylist(), strict=True)
        return found

    full = {p: end for p, (_, end) in latest.items()}
    # the batch reads partition 0 to its end but only 5 records of partition 1: the marker is dropped
    assert [v for v, end in rows(0, {**full, 1: 5}) if end] == []
    assert len(rows(0, {**full, 1: 5})) == 10
    # read together with all of partition 1, the same marker ends the input: one row, flagged
    ended = [(v, end) for v, end in rows(0, full) if end]
    assert len(ended) == 1
    assert EndOfInputMarker.decode(ended[0][0]).end_offsets == {0: 10, 1: 10}
    reader.stop()


def test_a_restarted_query_gets_one_batch_without_new_records(
    broker: EmbeddedBroker, reader_factory: Callable[..., KafkaStreamReader]
) -> None:
    """Spark runs no batch after a restart until a record comes; windows the last batch's watermark
    closed (the end of the input) would never be emitted. The first answer forces one empty batch."""
    create_topic(broker.bootstrap_servers, TOPIC, partitions=1)
    produce_acked(broker.bootstrap_servers, TOPIC, [b"x"] * 3, partition=0)
    checkpointed = {TOPIC: {"0": 3}}  # the last committed batch read everything
    restarted = reader_factory()
    forced = restarted.latestOffset(checkpointed, ReadAllAvailable())
    assert forced == {TOPIC: {"0": 3}, "onceflow.restarts": 1}
    assert list(restarted.partitions(checkpointed, forced)) == [], "the forced batch reads nothing"
    assert restarted.latestOffset(forced, ReadAllAvailable()) == forced, "then no batch until a record comes"
    produce_acked(broker.bootstrap_servers, TOPIC, [b"y"], partition=0)
    later = restarted.latestOffset(forced, ReadAllAvailable())
    assert later == {TOPIC: {"0": 4}, "onceflow.restarts": 1}
    assert _values(restarted, forced, later) == [b"y"]
    # a restart with new records needs no forced batch; a query without a checkpoint never gets one
    assert reader_factory().latestOffset(checkpointed, ReadAllAvailable()) == {TOPIC: {"0": 4}}
    fresh = reader_factory()
    start = fresh.initialOffset()
    end = fresh.latestOffset(start, ReadAllAvailable())
    assert fresh.latestOffset(end, ReadAllAvailable()) == end == {TOPIC: {"0": 4}}
