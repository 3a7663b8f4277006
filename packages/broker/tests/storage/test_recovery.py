"""Reopening a partition log after clean and unclean shutdowns."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from onceflow.broker.storage import (
    DuplicateSequenceError,
    LogConfig,
    PartitionLog,
    SimpleRecord,
    build_batch,
    decode_records,
    iter_batches,
)
from onceflow.core.logging import record_fields

NOW = 1_700_000_000_000
OpenLog = Callable[..., PartitionLog]
SMALL = LogConfig(segment_bytes=2000, index_interval_bytes=200)


def plain(n: int, count: int = 4) -> bytes:
    recs = [SimpleRecord(f"k{n}-{i}".encode(), b"v" * 30) for i in range(count)]
    return build_batch(recs, timestamp_ms=NOW + n)


def idem(seq: int) -> bytes:
    return build_batch(
        [SimpleRecord(b"k", b"v")] * 2, producer_id=5, producer_epoch=0, base_sequence=seq, timestamp_ms=NOW
    )


def abandon(log: PartitionLog) -> None:
    """Simulate kill -9: drop file descriptors without snapshot or fsync."""
    for segment in log.segments:
        segment.close()


def read_all(log: PartitionLog) -> bytes:
    """Every stored batch, fetching segment by segment as a consumer would."""
    out, offset = bytearray(), log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 10**9)
        out += data
        offset = [h.next_offset for _, h in iter_batches(data)][-1]
    return bytes(out)


def state_of(log: PartitionLog) -> tuple[int, int, int, bytes]:
    return log.log_start_offset, log.log_end_offset, len(log.segments), read_all(log)


def active_log_file(log_dir: Path) -> Path:
    return sorted(log_dir.glob("*.log"))[-1]


def test_reopen_gives_identical_state(open_log: OpenLog) -> None:
    log = open_log(SMALL)
    for n in range(30):
        log.append(plain(n), now_ms=NOW)
    before = state_of(log)
    log.close()
    assert state_of(open_log(SMALL)) == before


def test_torn_tail_is_truncated_and_appends_continue(
    open_log: OpenLog, log_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = open_log(SMALL)
    for n in range(5):
        log.append(plain(n), now_ms=NOW)
    end, size = log.log_end_offset, log.segments[-1].size
    log.append(plain(99), now_ms=NOW)
    abandon(log)
    path = active_log_file(log_dir)
    os.truncate(path, size + 30)  # crash mid-write of the last batch
    with caplog.at_level(logging.WARNING):
        log = open_log(SMALL)
    truncated = [record_fields(r) for r in caplog.records if r.getMessage() == "storage.torn_tail_truncated"]
    assert any(fields.get("bytes") == 30 for fields in truncated), caplog.records
    assert log.log_end_offset == end and path.stat().st_size == size
    assert log.append(plain(7), now_ms=NOW).base_offset == end


def test_garbage_after_the_last_batch_is_truncated(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    for n in range(3):
        log.append(plain(n), now_ms=NOW)
    before = state_of(log)
    log.close()
    with active_log_file(log_dir).open("ab") as f:
        f.write(os.urandom(500))
    log = open_log()
    assert state_of(log) == before
    assert log.append(plain(3), now_ms=NOW).base_offset == 12


def test_a_batch_with_a_bad_crc_at_the_tail_is_dropped(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    log.append(plain(0), now_ms=NOW)
    log.append(plain(1), now_ms=NOW)
    abandon(log)
    path = active_log_file(log_dir)
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF
    path.write_bytes(bytes(data))
    assert open_log().log_end_offset == 4


def test_deleted_or_corrupt_indexes_are_rebuilt(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log(SMALL)
    for n in range(40):
        log.append(plain(n), now_ms=NOW)
    before = state_of(log)
    closed = [f"{s.base_offset:020d}" for s in log.segments[:-1]]
    index_sizes = {p.name: p.stat().st_size for p in log_dir.glob("*index") if p.stem in closed}
    log.close()
    indexes = sorted(log_dir.glob("*.index"))
    indexes[0].unlink()
    sorted(log_dir.glob("*.timeindex"))[1].unlink()
    indexes[1].write_bytes(b"\x00\x00\x01")  # torn entry
    log = open_log(SMALL)
    assert state_of(log) == before
    assert {p.name: p.stat().st_size for p in log_dir.glob("*index") if p.stem in closed} == index_sizes
    assert [r.offset for r in decode_records(log.read(57, 10**6)[: 4 * 80])][:4] == [56, 57, 58, 59]


@pytest.mark.parametrize("with_snapshot", [True, False])
def test_producer_state_survives_restart(open_log: OpenLog, log_dir: Path, with_snapshot: bool) -> None:
    log = open_log(SMALL)
    for seq in range(0, 60, 2):
        log.append(idem(seq), now_ms=NOW)
    last = log.log_end_offset - 2
    if with_snapshot:
        log.close()
    else:
        abandon(log)
        for snapshot in log_dir.glob("*.snapshot"):
            snapshot.unlink()
    log = open_log(SMALL)
    with pytest.raises(DuplicateSequenceError) as info:
        log.append(idem(58), now_ms=NOW)
    assert info.value.base_offset == last
    assert log.append(idem(60), now_ms=NOW).base_offset == last + 2


def test_snapshot_beyond_a_truncated_log_is_ignored(open_log: OpenLog, log_dir: Path) -> None:
    log = open_log()
    log.append(idem(0), now_ms=NOW)
    size = log.segments[-1].size
    log.append(idem(2), now_ms=NOW)
    log.close()  # snapshot at offset 4 remembers seq 2
    os.truncate(active_log_file(log_dir), size + 10)
    log = open_log()
    assert log.log_end_offset == 2 and not (log_dir / f"{4:020d}.snapshot").exists()
    assert log.append(idem(2), now_ms=NOW).base_offset == 2  # not a duplicate any more


def test_reopen_after_kill_reads_every_acked_batch(open_log: OpenLog) -> None:
    log = open_log(SMALL)
    appended = [plain(n) for n in range(25)]
    for raw in appended:
        log.append(raw, now_ms=NOW)
    abandon(log)
    data = read_all(open_log(SMALL))
    stored = [data[p + 8 : p + h.size] for p, h in iter_batches(data)]
    assert stored == [raw[8:] for raw in appended]
