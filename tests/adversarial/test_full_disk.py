"""A full data disk never costs an acknowledged record (issue 14).

The broker runs as a child process on a real 4 MiB tmpfs. Producing until the disk is full makes
appends fail; those produces must be refused (KAFKA_STORAGE_ERROR), never acknowledged, and must
leave nothing behind that a later append or recovery trips over. Once space returns the partitions
take writes again, and after ``kill -9`` and a restart every acknowledged record is still at its
acknowledged offset, exactly once.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Message, Producer
from kio.schema.errors import ErrorCode

from onceflow.broker.groups import Committer, GroupCoordinator, OffsetAndMetadata
from onceflow.broker.statelog import StateLog, StateLogWriteFailed
from onceflow.broker.storage import LogConfig, PartitionLog, SimpleRecord, build_batch
from onceflow.broker.storage.errors import LogWriteError
from onceflow.testing.broker.clients import create_topic, produce_acked, read_topic
from onceflow.testing.broker.fixtures import BrokerFactory

from .mounts import fill, fill_up, tmpfs

TOPIC = "disk"
PARTITIONS = 2
VALUE_SIZE = 1000
FILLER_BYTES = 1536 * 1024


def _value(index: int) -> bytes:
    return b"%08d" % index + b"x" * (VALUE_SIZE - 8)


def _produce_until_full(bootstrap: str, max_seconds: float = 90.0) -> tuple[list[tuple[int, int, bytes]], Counter[str]]:
    """Produce (acks=all, idempotent) until deliveries fail; returns the acked records and the errors."""
    acked: list[tuple[int, int, bytes]] = []
    errors: Counter[str] = Counter()

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            errors[err.name()] += 1
        else:
            partition, offset = msg.partition(), msg.offset()
            assert partition is not None and offset is not None
            acked.append((partition, offset, msg.value() or b""))

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.size": 32 * 1024,
            "message.timeout.ms": 4000,
            "retry.backoff.ms": 100,
        }
    )
    deadline = time.monotonic() + max_seconds
    index = 0
    try:
        while time.monotonic() < deadline and sum(errors.values()) < 50:
            for _ in range(100):
                producer.produce(TOPIC, value=_value(index), partition=index % PARTITIONS, on_delivery=on_delivery)
                index += 1
            producer.poll(0.05)
    except (KafkaException, BufferError):
        pass  # a fatal producer error also ends the phase; what was acked still counts
    producer.flush(30)
    return acked, errors


@pytest.mark.slow
def test_full_disk_loses_no_acknowledged_record(tmp_path: Path, broker_factory: BrokerFactory) -> None:
    with tmpfs(tmp_path / "disk", size="4m") as data_dir:
        broker = broker_factory(data_dir, log_segment_bytes=256 * 1024)
        create_topic(broker.bootstrap_servers, TOPIC, partitions=PARTITIONS)
        filler = data_dir / "filler"
        fill(filler, FILLER_BYTES)

        acked, errors = _produce_until_full(broker.bootstrap_servers)
        assert errors, "the disk never filled up"
        assert acked, "nothing was acknowledged before the disk filled up"

        filler.unlink()
        more = produce_acked(
            broker.bootstrap_servers,
            TOPIC,
            (_value(1_000_000 + i) for i in range(300)),
            config={"acks": "all", "linger.ms": 5, "batch.size": 32 * 1024},
            timeout=60,
        )
        acked += more

        broker.kill()
        broker.start()
        records = read_topic(broker.bootstrap_servers, TOPIC, isolation_level="read_uncommitted", idle_timeout=1.0)
        broker.stop()

    stored = {(r.partition, r.offset): r.value for r in records}
    missing = [(p, o) for p, o, v in acked if stored.get((p, o)) != v]
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged records lost or moved, e.g. {missing[:5]}"
    offsets = Counter((p, o) for p, o, _ in acked)
    assert all(n == 1 for n in offsets.values()), "an offset was acknowledged twice"
    values = Counter(r.value for r in records)
    assert all(n == 1 for n in values.values()), "a record is stored twice"


def _batch(index: int, size: int = 8192) -> bytes:
    return build_batch([SimpleRecord(b"k%d" % index, b"v" * size)], timestamp_ms=1_700_000_000_000)


def test_a_failed_append_is_rolled_back_and_the_partition_takes_writes_again(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", size="1m") as disk:
        directory = disk / "events-0"
        log = PartitionLog.open(directory, "events", 0, LogConfig(), now_ms=0)
        first = log.append(_batch(0), now_ms=0)
        segment = log.segments[-1]
        size_before = segment.size
        fill_up(disk / "filler")

        with pytest.raises(LogWriteError) as failure:
            log.append(_batch(1), now_ms=0)
        assert not failure.value.partition_offline
        assert log.log_end_offset == first.last_offset + 1
        assert segment.size == size_before == segment.path.stat().st_size

        (disk / "filler").unlink()
        second = log.append(_batch(2), now_ms=0)
        assert second.base_offset == first.last_offset + 1
        log.close()

        reopened = PartitionLog.open(directory, "events", 0, LogConfig(), now_ms=0)
        assert reopened.log_end_offset == second.last_offset + 1
        assert reopened.segments[-1].size == segment.size
        reopened.close()


def test_a_failed_state_log_append_is_rolled_back_and_later_appends_work(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", size="1m") as disk:
        state = StateLog.open(disk / "state.log", fsync=False)
        state.append(b"a", b"1")
        fill_up(disk / "filler")
        with pytest.raises(StateLogWriteFailed):
            state.append(b"b", b"x" * 65536)
        (disk / "filler").unlink()
        state.append(b"c", b"3")
        state.close()
        reopened = StateLog.open(disk / "state.log", fsync=False)
        assert list(reopened.replay()) == [(b"a", b"1"), (b"c", b"3")]
        reopened.close()


def test_an_offset_commit_on_a_full_disk_is_refused_and_the_next_one_works(tmp_path: Path) -> None:
    def at(offset: int) -> OffsetAndMetadata:
        return OffsetAndMetadata(offset, -1, None, 1_700_000_000_000)

    async def scenario(disk: Path) -> None:
        coordinator = GroupCoordinator(disk / "groups", fsync=False, group_initial_rebalance_delay_ms=0)
        await coordinator.start()
        partition = ("t", 0)
        assert coordinator.commit_offsets("g", Committer(), {partition: at(1)}) == {partition: ErrorCode.none}
        fill_up(disk / "filler")
        big = {("t", i): OffsetAndMetadata(i, -1, "m" * 4000, 0) for i in range(64)}
        results = coordinator.commit_offsets("g", Committer(), big)
        assert set(results.values()) == {ErrorCode.coordinator_not_available}
        (disk / "filler").unlink()
        assert coordinator.commit_offsets("g", Committer(), {partition: at(2)}) == {partition: ErrorCode.none}
        assert coordinator.fetch_offsets("g", None) == (ErrorCode.none, {partition: at(2)})
        await coordinator.stop()

    with tmpfs(tmp_path / "disk", size="1m") as disk:
        asyncio.run(scenario(disk))
