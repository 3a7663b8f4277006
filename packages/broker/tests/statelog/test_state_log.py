"""Behaviour of StateLog: durability, replay order, torn-tail recovery, compaction."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from onceflow.broker.statelog import StateLog, StateLogClosed, StateLogCorrupt, StateLogLocked


def _replayed(path: Path) -> list[tuple[bytes, bytes | None]]:
    with StateLog.open(path, fsync=False) as log:
        return list(log.replay())


def test_replay_yields_records_in_append_order_after_reopen(tmp_path: Path) -> None:
    path = tmp_path / "state.log"
    with StateLog.open(path, fsync=True) as log:
        log.append(b"a", b"1")
        log.append_many([(b"b", b"2"), (b"a", None), (b"c", b"")])
        log.append_many([])
    assert _replayed(path) == [(b"a", b"1"), (b"b", b"2"), (b"a", None), (b"c", b"")]


def test_replay_is_a_snapshot_of_the_call(tmp_path: Path) -> None:
    with StateLog.open(tmp_path / "state.log", fsync=False) as log:
        log.append(b"a", b"1")
        records = log.replay()
        log.append(b"b", b"2")
        assert list(records) == [(b"a", b"1")]


@pytest.mark.parametrize("cut", [1, 5, 9, 12])
def test_partial_frame_at_the_tail_is_truncated_with_a_warning(
    tmp_path: Path, cut: int, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "state.log"
    with StateLog.open(path, fsync=False) as log:
        log.append(b"a", b"1")
        good_size = log.size_bytes
        log.append_many([(b"b", b"2"), (b"c", b"3")])
    with path.open("r+b") as file:
        file.truncate(good_size + cut)

    with caplog.at_level(logging.WARNING), StateLog.open(path, fsync=False) as log:
        assert list(log.replay()) == [(b"a", b"1")]
        assert log.size_bytes == good_size
        log.append(b"d", b"4")
    assert "statelog.torn_tail_truncated" in caplog.text
    assert path.stat().st_size > good_size
    assert _replayed(path) == [(b"a", b"1"), (b"d", b"4")]


def test_crc_mismatch_at_the_tail_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "state.log"
    with StateLog.open(path, fsync=False) as log:
        log.append(b"a", b"1")
        good_size = log.size_bytes
        log.append(b"b", b"some value")
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))

    assert _replayed(path) == [(b"a", b"1")]
    assert path.stat().st_size == good_size


def test_a_file_that_is_not_a_state_log_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.log"
    path.write_bytes(b"definitely not a state log")
    with pytest.raises(StateLogCorrupt):
        StateLog.open(path, fsync=False)


def test_a_partial_file_header_is_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "state.log"
    path.write_bytes(b"OFS")
    assert _replayed(path) == []


def test_second_open_of_the_same_log_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.log"
    with StateLog.open(path, fsync=False), pytest.raises(StateLogLocked):
        StateLog.open(path, fsync=False)
    StateLog.open(path, fsync=False).close()


def test_append_after_close_raises(tmp_path: Path) -> None:
    log = StateLog.open(tmp_path / "state.log", fsync=False)
    log.close()
    log.close()
    with pytest.raises(StateLogClosed):
        log.append(b"a", b"1")


def test_compaction_keeps_the_last_value_per_key_and_drops_tombstones(tmp_path: Path) -> None:
    path = tmp_path / "state.log"
    with StateLog.open(path, fsync=False) as log:
        log.append(b"a", b"1")
        log.append(b"b", b"1")
        log.append(b"c", b"1")
        log.append(b"a", b"2")
        log.append(b"b", None)
        before = log.size_bytes
        log.compact()
        assert log.size_bytes < before
        assert list(log.replay()) == [(b"c", b"1"), (b"a", b"2")]
        log.append(b"d", b"1")
    assert _replayed(path) == [(b"c", b"1"), (b"a", b"2"), (b"d", b"1")]


def test_compaction_runs_by_itself_when_the_file_outgrows_its_live_size(tmp_path: Path) -> None:
    path = tmp_path / "state.log"
    with StateLog.open(path, fsync=False, compaction_ratio=3.0, min_compaction_bytes=1024) as log:
        for i in range(500):
            log.append(b"offset", str(i).encode())
            assert log.size_bytes <= max(1024 + 64, 3 * (log.live_bytes + 8) + 64)
        assert dict(log.replay()) == {b"offset": b"499"}
        assert log.size_bytes < 1024 + 64
    assert dict(_replayed(path)) == {b"offset": b"499"}


def test_leftover_compaction_file_from_a_crash_is_ignored_and_removed(tmp_path: Path) -> None:
    path = tmp_path / "state.log"
    with StateLog.open(path, fsync=False) as log:
        log.append(b"a", b"1")
        log.append(b"a", b"2")
    # A compaction killed after writing part of its tmp file, before the rename.
    leftover = tmp_path / "state.log.compact.tmp"
    leftover.write_bytes(b"OFSTATE\x01\x00\x00\x00\x20garbage")

    assert _replayed(path) == [(b"a", b"1"), (b"a", b"2")]
    assert not leftover.exists()


_WRITER = """
import sys
from pathlib import Path
from onceflow.broker.statelog import StateLog

log = StateLog.open(Path(sys.argv[1]), fsync=False, min_compaction_bytes=1 << 40)
i = 0
while True:
    log.append_many([(b"counter", str(i).encode()), (b"mirror", str(i).encode())])
    if i == 0:
        print("ready", flush=True)
    i += 1
"""


def test_acked_appends_survive_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "state.log"
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert writer.stdout is not None
    assert writer.stdout.readline() == b"ready\n"
    time.sleep(0.3)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()

    records = _replayed(path)
    values = [int(value or b"-1") for _, value in records]
    assert len(values) >= 2
    # Whole frames only: every counter record is followed by its mirror, in order, with no gaps.
    assert [key for key, _ in records] == [b"counter", b"mirror"] * (len(records) // 2)
    assert values == [i // 2 for i in range(len(values))]
