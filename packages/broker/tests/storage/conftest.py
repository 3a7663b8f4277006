"""Shared fixtures for the storage tests: real partition logs in a temporary directory, and a
transactional producer plus a read_committed consumer for the transaction tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from onceflow.broker.storage import (
    ControlType,
    LogConfig,
    PartitionLog,
    SimpleRecord,
    build_batch,
    decode_records,
    iter_batches,
)
from onceflow.broker.storage.batch import control_type_of

TOPIC = "events"
NOW = 1_700_000_000_000

OpenLog = Callable[..., PartitionLog]


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / f"{TOPIC}-0"


@pytest.fixture
def open_log(log_dir: Path) -> Iterator[OpenLog]:
    """Open (or reopen) the partition log in ``log_dir``; logs still open at teardown are closed."""
    opened: list[PartitionLog] = []

    def _open(config: LogConfig | None = None, now_ms: int = NOW) -> PartitionLog:
        log = PartitionLog.open(log_dir, TOPIC, 0, config or LogConfig(), now_ms=now_ms)
        opened.append(log)
        return log

    yield _open
    for log in opened:
        for segment in log.segments:
            segment.close()


def _records(count: int, *, prefix: str = "k", size: int = 20, timestamp_ms: int = -1) -> list[SimpleRecord]:
    return [
        SimpleRecord(f"{prefix}{i}".encode(), bytes([i % 256]) * size, timestamp_ms=timestamp_ms) for i in range(count)
    ]


def _batch(count: int = 3, *, timestamp_ms: int = NOW, **kwargs: object) -> bytes:
    return build_batch(_records(count), timestamp_ms=timestamp_ms, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def make_records() -> Callable[..., list[SimpleRecord]]:
    """``make_records(count, prefix="k", size=20, timestamp_ms=-1)``: keys k0..k{count-1}."""
    return _records


@pytest.fixture
def make_batch() -> Callable[..., bytes]:
    """``make_batch(count=3, timestamp_ms=NOW, **build_batch kwargs)``."""
    return _batch


# --- transactions ---------------------------------------------------------------------------------
Consumed = list[tuple[int, bytes | None]]


class TxnProducer:
    """A transactional producer as the broker sees it: pid, epoch, sequences, and its markers
    (written as the transaction coordinator would)."""

    def __init__(self, producer_id: int, epoch: int = 0) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.sequence = 0

    def send(self, log: PartitionLog, *values: bytes, transactional: bool = True, now_ms: int = NOW) -> int:
        """Append one batch of ``values`` (keys = values); returns its base offset."""
        records = [SimpleRecord(v, v) for v in values]
        raw = build_batch(
            records,
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequence,
            transactional=transactional,
            timestamp_ms=now_ms,
        )
        info = log.append(raw, now_ms=now_ms)
        self.sequence += len(values)
        return info.base_offset

    def end(self, log: PartitionLog, marker: ControlType, *, epoch: int | None = None, now_ms: int = NOW) -> int:
        """Write the coordinator's marker (at ``epoch``, default the producer's); returns its offset."""
        return log.append_control(
            marker,
            producer_id=self.producer_id,
            producer_epoch=self.epoch if epoch is None else epoch,
            coordinator_epoch=0,
            now_ms=now_ms,
        )

    def commit(self, log: PartitionLog) -> int:
        return self.end(log, ControlType.COMMIT)

    def abort(self, log: PartitionLog) -> int:
        return self.end(log, ControlType.ABORT)


def consume_committed(log: PartitionLog, max_bytes: int = 300) -> Consumed:
    """``(offset, value)`` of every record a read_committed consumer sees from the log start to the
    LSO, fetching ``max_bytes`` at a time and filtering batches the way Kafka's Java consumer does: an
    aborted transaction applies from its first offset until its producer's ABORT marker."""
    out: Consumed = []
    offset, lso = log.log_start_offset, log.last_stable_offset
    while offset < lso:
        data, aborted = log.read_committed(offset, max_bytes)
        assert data, f"read_committed returned nothing at {offset} below the LSO {lso}"
        pending = sorted(aborted, key=lambda a: a.first_offset)
        aborted_pids: set[int] = set()
        for position, header in iter_batches(data):
            assert header.last_offset < lso, "a batch at or beyond the LSO was returned"
            batch = data[position : position + header.size]
            while pending and pending[0].first_offset <= header.last_offset:
                aborted_pids.add(pending.pop(0).producer_id)
            if header.is_control:
                if control_type_of(batch) == ControlType.ABORT:
                    aborted_pids.discard(header.producer_id)
            elif not (header.is_transactional and header.producer_id in aborted_pids):
                out += [(r.offset, r.value) for r in decode_records(batch) if r.offset >= offset]
            offset = header.next_offset
    return out


@pytest.fixture(scope="session")
def read_committed_view() -> Callable[..., Consumed]:
    """``read_committed_view(log, max_bytes=300)``: see :func:`consume_committed`."""
    return consume_committed


@pytest.fixture(scope="session")
def producer() -> Callable[..., TxnProducer]:
    """``producer(pid, epoch=0)``: a :class:`TxnProducer`."""
    return TxnProducer
