"""Property: whatever the interleaving of transactional and plain appends, commits, aborts (also
re-sent ones), restarts, crashes and lost ``.txnindex`` files, a read_committed consumer that reads
``[log start, LSO)`` and filters with ``aborted_transactions`` sees exactly the plain and committed
records below the LSO, in offset order, and the LSO is the first offset of the earliest open
transaction (else the high watermark)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from onceflow.broker.storage import LogConfig, PartitionLog, SimpleRecord, build_batch

NOW = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=400, index_interval_bytes=150)
PIDS = st.integers(1, 3)

operations = st.lists(
    st.one_of(
        st.tuples(st.just("txn"), PIDS, st.integers(1, 4)),
        st.tuples(st.just("txn"), PIDS, st.integers(1, 4)),
        st.tuples(st.just("plain"), st.just(0), st.integers(1, 3)),
        st.tuples(st.just("commit"), PIDS, st.just(0)),
        st.tuples(st.just("abort"), PIDS, st.just(0)),
        st.tuples(st.sampled_from(["reopen", "crash", "lose_txn_indexes"]), st.just(0), st.just(0)),
    ),
    max_size=45,
)


class Model:
    """What a read_committed consumer must see, tracked offset by offset."""

    def __init__(self) -> None:
        self.log_end = 0
        self.records: dict[int, bytes] = {}
        self.visible: set[int] = set()
        self.open: dict[int, list[int]] = {}

    def write(self, values: list[bytes], pid: int | None) -> None:
        for value in values:
            self.records[self.log_end] = value
            if pid is None:
                self.visible.add(self.log_end)
            else:
                self.open.setdefault(pid, []).append(self.log_end)
            self.log_end += 1

    def end(self, pid: int, committed: bool) -> None:
        offsets = self.open.pop(pid, [])
        if committed:
            self.visible.update(offsets)
        self.log_end += 1

    @property
    def lso(self) -> int:
        return min((offsets[0] for offsets in self.open.values()), default=self.log_end)

    def expected(self) -> list[tuple[int, bytes | None]]:
        return [(o, self.records[o]) for o in sorted(self.visible) if o < self.lso]


def open_log(directory: Path) -> PartitionLog:
    return PartitionLog.open(directory, "p", 0, CONFIG, now_ms=NOW)


def crash(log: PartitionLog) -> None:
    for segment in log.segments:
        segment.close()


@settings(max_examples=80, deadline=None)
@given(ops=operations)
def test_read_committed_sees_exactly_committed_and_plain_records(
    ops: list[tuple[str, int, int]], producer: Callable[..., Any], read_committed_view: Callable[..., Any]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "p-0"
        log = open_log(directory)
        producers = {pid: producer(pid) for pid in (1, 2, 3)}
        model = Model()
        for step, (kind, pid, count) in enumerate(ops):
            values = [b"%d-%d" % (step, i) + b"x" * 20 for i in range(count)]
            if kind == "txn":
                producers[pid].send(log, *values)
                model.write(values, pid)
            elif kind == "plain":
                log.append(build_batch([SimpleRecord(None, v) for v in values], timestamp_ms=NOW), now_ms=NOW)
                model.write(values, None)
            elif kind in ("commit", "abort"):
                producers[pid].commit(log) if kind == "commit" else producers[pid].abort(log)
                model.end(pid, kind == "commit")
            elif kind == "reopen":
                log.close()
                log = open_log(directory)
            else:
                crash(log)
                if kind == "lose_txn_indexes":
                    for path in directory.glob("*.txnindex"):
                        path.unlink()
                log = open_log(directory)
            assert (log.log_end_offset, log.last_stable_offset) == (model.log_end, model.lso)
            assert all(log.has_open_transaction(p) == (p in model.open) for p in producers)
        assert read_committed_view(log) == model.expected()
        assert read_committed_view(log, max_bytes=1) == model.expected()
        log.close()
