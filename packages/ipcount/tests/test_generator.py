"""The generator is deterministic per (seed, i, config); the truth command counts its windows exactly."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter

import pytest

from onceflow.cli.app import main as onceflow
from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.ipcount.generator import AccessLogGeneratorTask, EncodedTraffic
from onceflow.ipcount.traffic import TrafficModel, event, expected_counts
from onceflow.runtime.api.source import SourceTaskContext


class _NoOffsets:
    def offset(self, partition: object) -> None:
        return None


class _Offsets:
    def __init__(self, seq: int) -> None:
        self.seq = seq

    def offset(self, partition: object) -> dict[str, int]:
        return {"seq": self.seq}


def _task(config: dict[str, str], offsets: object = None) -> AccessLogGeneratorTask:
    task = AccessLogGeneratorTask()
    task.initialize(SourceTaskContext("gen", 0, offsets or _NoOffsets()))  # type: ignore[arg-type]
    task.start(config)
    return task


def test_records_are_the_pure_function_of_seed_and_index() -> None:
    model = TrafficModel(seed=7)
    task = _task({"seed": "7", "count": "10000", "batch.size": "10000"})
    records = task.poll()
    assert len(records) == 10_000
    for i in (0, 1, 4095, 4096, 9999):
        record = records[i]
        assert ACCESS_EVENT_SERDE.decode(record.value or b"") == event(model, i)
        assert record.key == event(model, i)["ip"].encode()
        assert record.timestamp is None, "the event time is in the value; the record time is the producer's"
        assert record.headers == [("seq", str(i).encode())]
        assert record.source_offset == {"seq": i}
    assert task.poll() == []  # count reached
    # Resuming after seq 4999 continues at 5000, identically.
    resumed = _task({"seed": "7", "count": "10000", "batch.size": "10"}, _Offsets(4999)).poll()
    assert [r.value for r in resumed] == [r.value for r in records[5000:5010]]


def test_tasks_split_the_sequence() -> None:
    second = _task({"seed": "1", "task.index": "1", "task.count": "3", "count": "10"}).poll()
    assert [int(r.headers[0][1]) for r in second if r.headers] == [1, 4, 7]


def test_disorder_is_bounded_and_zipf_skews_ips() -> None:
    model = TrafficModel(seed=3, max_disorder_ms=3000)
    events = [event(model, i) for i in range(20_000)]
    newest = 0
    for e in events:
        assert newest - e["event_time"] <= 3000
        newest = max(newest, e["event_time"])
    top = Counter(e["ip"] for e in events).most_common(2)
    assert top[0][1] > 2 * top[1][1] * 0.9 and top[0][1] > 20_000 / 1000 * 10


def test_different_seeds_differ() -> None:
    assert [event(TrafficModel(seed=1), i) for i in range(50)] != [event(TrafficModel(seed=2), i) for i in range(50)]


def test_truth_counts_every_event_once_per_window() -> None:
    model = TrafficModel(seed=5)
    rows = expected_counts(model, 12_345, 5000)
    assert sum(r.count for r in rows) == 12_345
    i = 777
    e = event(model, i)
    start = e["event_time"] - e["event_time"] % 5000
    assert any(r.window_start == start and r.window_end == start + 5000 and r.ip == e["ip"] for r in rows)


def test_truth_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert onceflow(["ipcount", "truth", "--seed", "5", "--count", "3000"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert sum(int(r["count"]) for r in rows) == 3000
    assert set(rows[0]) == {"window_start", "window_end", "ip", "count"}
    assert onceflow(["ipcount", "truth", "--seed", "5", "--count", "100", "--format", "jsonl", "-c", "ips=3"]) == 0
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len({d["ip"] for d in docs}) <= 3 and sum(d["count"] for d in docs) == 100
    assert onceflow(["ipcount", "truth", "--seed", "5", "--count", "1", "-c", "ips=zero"]) == 2
    assert "'ips'" in capsys.readouterr().err


def test_encoded_traffic_is_the_model_s_events_and_a_live_load_stamps_the_wall_clock() -> None:
    model = TrafficModel(seed=3)
    traffic = EncodedTraffic(model)
    # across a block boundary (4096 events a block), every third event
    encoded = list(traffic.encoded(7_000, 9_000, 3))
    assert [i for i, _, _ in encoded] == list(range(7_000, 9_000, 3))
    for i, key, value in encoded:
        assert ACCESS_EVENT_SERDE.decode(value) == event(model, i)
        assert key == event(model, i)["ip"].encode()
    for i, _, value in traffic.encoded(0, 500, event_time=1_796_000_000_123):
        assert ACCESS_EVENT_SERDE.decode(value) == {**event(model, i), "event_time": 1_796_000_000_123}
