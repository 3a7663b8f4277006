"""Property: any interleaving of appends, reopens, crashes and torn tails keeps the log consistent.

Offsets stay contiguous from 0, and reading the log back returns exactly the batches that survived:
every acknowledged batch, except those a torn tail cut into (which only ever lie at the end).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from onceflow.broker.storage import LogConfig, PartitionLog, SimpleRecord, build_batch, decode_records, iter_batches

NOW = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=1500, index_interval_bytes=300)

appends = st.tuples(st.just("append"), st.integers(1, 12), st.integers(0, 60))
reopens = st.tuples(st.just("reopen"), st.just(0), st.just(0))
crashes = st.tuples(st.just("crash"), st.just(0), st.just(0))
tears = st.tuples(st.just("tear"), st.integers(1, 400), st.just(0))
operations = st.lists(st.one_of(appends, appends, reopens, crashes, tears), max_size=40)


@dataclass
class Appended:
    values: list[bytes]
    size: int
    segment_base: int


def read_all(log: PartitionLog) -> list[tuple[int, bytes | None]]:
    out: list[tuple[int, bytes | None]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 2000)
        assert data, f"empty read at {offset} below log end {log.log_end_offset}"
        for position, header in iter_batches(data):
            out += [(r.offset, r.value) for r in decode_records(data[position : position + header.size])]
            offset = header.next_offset
    return out


def crash(log: PartitionLog) -> None:
    for segment in log.segments:
        segment.close()


@settings(max_examples=60, deadline=None)
@given(operations)
def test_any_interleaving_keeps_offsets_contiguous_and_reads_exact(ops: list[tuple[str, int, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "p-0"
        log = PartitionLog.open(directory, "p", 0, CONFIG, now_ms=NOW)
        model: list[Appended] = []
        expected: list[bytes] = []
        counter = 0
        for kind, a, b in ops:
            if kind == "append":
                values = [f"{counter}-{i}".encode() + b"x" * b for i in range(a)]
                counter += 1
                raw = build_batch([SimpleRecord(None, v) for v in values], timestamp_ms=NOW)
                info = log.append(raw, now_ms=NOW)
                assert info.base_offset == sum(len(m.values) for m in model)
                model.append(Appended(values, len(raw), log.segments[-1].base_offset))
            elif kind == "reopen":
                log.close()
                log = PartitionLog.open(directory, "p", 0, CONFIG, now_ms=NOW)
            elif kind == "crash":
                crash(log)
                log = PartitionLog.open(directory, "p", 0, CONFIG, now_ms=NOW)
            else:  # tear `a` bytes off the active segment, as a crash mid-write would
                active = log.segments[-1]
                crash(log)
                cut = min(a, active.size)
                os.truncate(active.path, active.size - cut)
                remaining = active.size - cut
                in_active = [m for m in model if m.segment_base == active.base_offset]
                kept_bytes, survivors = 0, len(model) - len(in_active)
                for m in in_active:
                    if kept_bytes + m.size > remaining:
                        break
                    kept_bytes += m.size
                    survivors += 1
                del model[survivors:]
                log = PartitionLog.open(directory, "p", 0, CONFIG, now_ms=NOW)
            expected = [v for m in model for v in m.values]
            assert log.log_end_offset == len(expected)
        assert read_all(log) == list(enumerate(expected))
        log.close()
