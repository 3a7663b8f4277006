"""How a sharded sink splits a batch: by file for append outputs, by key for keyed upsert outputs."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal

import pyarrow as pa
import pytest

from onceflow.contract import DEFAULT_OUTPUT, InvalidBinding, ParticipantRef, Shard, SinkBinding, SinkMode
from onceflow.contract.proto import shard_from_proto, shard_to_proto
from onceflow.contract.shards import (
    assign_files,
    check_shardable,
    key_shard,
    record_names,
    rows_of_shard,
    shard_files,
)
from onceflow.contract.staging import StagedFile
from onceflow.ipcount.schema import IP_COUNT_ARROW_SCHEMA, ip_count_table_binding
from onceflow.proto.v1 import common_pb2


def _file(name: str, count: int, output: str = DEFAULT_OUTPUT) -> StagedFile:
    return StagedFile(f"file:///s/j/0/{name}", count, hashlib.sha256(name.encode()).hexdigest(), output)


APPEND = SinkBinding("pg", output="events", table="events", mode=SinkMode.APPEND, schema=IP_COUNT_ARROW_SCHEMA)
KEYED = ip_count_table_binding("pg")


def test_shard_names_and_bounds() -> None:
    assert Shard().record_name("kafka") == "kafka"
    assert Shard(1, 2).record_name("kafka") == "kafka#1"
    assert record_names("pg", 3) == ["pg#0", "pg#1", "pg#2"]
    assert str(Shard(1, 2)) == "shard 1 of 2"
    with pytest.raises(ValueError, match=r"shard index 2 is not in 0\.\.1"):
        Shard(2, 2)
    with pytest.raises(ValueError, match="1 to 32 shards"):
        Shard(0, 33)
    refs = ParticipantRef.shards_of("kafka", ["a:1", "b:2"])
    assert [(r.name, r.target, r.shard) for r in refs] == [
        ("kafka#0", "a:1", Shard(0, 2)),
        ("kafka#1", "b:2", Shard(1, 2)),
    ]
    (single,) = ParticipantRef.shards_of("kafka", ["a:1"])
    assert single == ParticipantRef("kafka", "a:1")


def test_a_shard_travels_in_requests_and_an_unset_one_is_the_whole_sink() -> None:
    assert shard_to_proto(Shard()) is None
    assert shard_from_proto(shard_to_proto(Shard(3, 4))) == Shard(3, 4)
    assert shard_from_proto(None) == Shard()
    assert shard_from_proto(common_pb2.Shard()) == Shard()
    with pytest.raises(ValueError, match="shard index 2 without a shard count"):
        shard_from_proto(common_pb2.Shard(index=2))
    with pytest.raises(ValueError, match=r"not in 0\.\.1"):
        shard_from_proto(common_pb2.Shard(index=5, count=2))


def test_append_files_are_dealt_to_shards_balanced_by_rows_and_the_same_for_any_order() -> None:
    files = [_file("a", 100, "events"), _file("b", 10, "events"), _file("c", 60, "events"), _file("d", 50, "events")]
    owner = assign_files(files, 2)
    assert owner == {"file:///s/j/0/a": 0, "file:///s/j/0/c": 1, "file:///s/j/0/d": 1, "file:///s/j/0/b": 0}
    assert assign_files(list(reversed(files)), 2) == owner
    shares = [shard_files(files, [APPEND], Shard(i, 2)) for i in range(2)]
    assert sorted(f.uri for share in shares for f in share) == sorted(f.uri for f in files), "each file exactly once"
    assert [sum(f.count for f in share) for share in shares] == [110, 110]
    assert shard_files(files, [APPEND], Shard()) == tuple(files)
    # empty files spread too (each counts one row), so no shard gets all of them
    empties = [_file(f"e{i}", 0, "events") for i in range(4)]
    assert sorted(assign_files(empties, 2).values()) == [0, 0, 1, 1]


def test_keyed_outputs_and_unbound_files_go_to_every_shard() -> None:
    results = [_file("r0", 5), _file("r1", 7)]
    events = [_file("e0", 3, "events"), _file("e1", 4, "events")]
    for index in range(2):
        share = shard_files(results + events, [KEYED, APPEND], Shard(index, 2))
        assert [f for f in share if f.output == DEFAULT_OUTPUT] == results
        assert len([f for f in share if f.output == "events"]) == 1
        assert shard_files(results, [], Shard(index, 2)) == tuple(results), "no bindings: every file"


def test_an_output_bound_by_key_and_by_file_on_one_sharded_sink_is_refused() -> None:
    by_file = SinkBinding("pg", output=DEFAULT_OUTPUT, table="log", mode=SinkMode.APPEND, schema=IP_COUNT_ARROW_SCHEMA)
    with pytest.raises(InvalidBinding, match=r"output 'results' cannot be split both by key .* and by file"):
        check_shardable("pg", [KEYED, by_file])
    check_shardable("pg", [KEYED, APPEND])


def test_rows_are_split_by_key_so_every_key_has_one_owner() -> None:
    table = pa.table(
        {
            "window_start": pa.array([i // 7 for i in range(200)], pa.int64()),
            "window_end": pa.array([i // 7 + 5 for i in range(200)], pa.int64()),
            "ip": [f"10.0.0.{i % 13}" for i in range(200)],
            "count": pa.array(range(200), pa.int64()),
        }
    )
    keys = ("window_start", "ip")
    parts = [rows_of_shard(table, keys, Shard(i, 3)) for i in range(3)]
    assert sum(part.num_rows for part in parts) == table.num_rows
    assert all(part.num_rows > 30 for part in parts), [part.num_rows for part in parts]
    owners = [{(r["window_start"], r["ip"]) for r in part.to_pylist()} for part in parts]
    assert not (owners[0] & owners[1]) and not (owners[1] & owners[2]) and not (owners[0] & owners[2])
    assert rows_of_shard(table, keys, Shard()) is table


def test_the_key_hash_is_the_same_in_every_process() -> None:
    """The shards of a sink are separate processes: Python's per-process str hash must not leak in."""
    literal = "('10.1.2.3', 42, datetime(2026, 1, 1, tzinfo=UTC), Decimal('1.50'), b'\\x00\\xff', None, 2.5)"
    key = ("10.1.2.3", 42, datetime(2026, 1, 1, tzinfo=UTC), Decimal("1.50"), b"\x00\xff", None, 2.5)
    here = key_shard(key, 7)
    code = (
        "from datetime import UTC, datetime; from decimal import Decimal;"
        f"from onceflow.contract.shards import key_shard; print(key_shard({literal}, 7))"
    )
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert int(there.stdout) == here
