"""The column-by-column AccessEvent decoder agrees with the per-record serde on every record, good or bad."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.core.end_of_input import END_OF_INPUT_TIME_MS
from onceflow.core.errors import SerializationError
from onceflow.ipcount.traffic.model import TrafficModel, event
from onceflow.spark.job.decode import EVENT_FIELDS, decode_batch
from onceflow.spark.source.schema import arrow_schema

ALL_FIELDS = list(EVENT_FIELDS)


def source_batch(values: list[bytes | None], ends: list[bool] | None = None) -> pa.RecordBatch:
    count = len(values)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([b"k"] * count, pa.binary()),
            pa.array(values, pa.binary()),
            pa.array(["t"] * count, pa.string()),
            pa.array([0] * count, pa.int32()),
            pa.array(list(range(count)), pa.int64()),
            pa.array([0] * count, pa.timestamp("us", tz="UTC")),
            pa.array(ends or [False] * count, pa.bool_()),
        ],
        schema=arrow_schema(),
    )


def expected(values: list[bytes | None], fields: list[str]) -> tuple[list[dict[str, object]], list[int]]:
    """What the per-record serde makes of ``values``: the decoded rows, and the offsets of the dead letters."""
    rows: list[dict[str, object]] = []
    dead: list[int] = []
    for offset, value in enumerate(values):
        try:
            if value is None:
                raise SerializationError("null")
            decoded = ACCESS_EVENT_SERDE.decode(value)
            if not -(2**31) <= decoded["status"] < 2**31:
                raise SerializationError("status out of range")
        except SerializationError:
            dead.append(offset)
            continue
        rows.append({f: decoded["event_time" if f == "event_time_ms" else f] for f in fields})  # type: ignore[literal-required]
    return rows, dead


def events(count: int, seed: int = 3) -> list[bytes]:
    model = TrafficModel(seed=seed)
    return [ACCESS_EVENT_SERDE.encode(event(model, i)) for i in range(count)]


@pytest.mark.parametrize("fields", [ALL_FIELDS, ["event_time_ms", "ip"], ["status", "user_agent"]])
def test_good_records_decode_as_the_serde_decodes_them(fields: list[str]) -> None:
    values: list[bytes | None] = list(events(1000))
    decoded, dead = decode_batch(source_batch(values), fields)
    assert (decoded.to_pylist(), dead) == (expected(values, fields)[0], [])


def test_unusual_values_take_the_same_path() -> None:
    """Negative times, empty and non-ASCII strings, the extremes of int and long."""
    records = [
        {"event_time": -1, "ip": "", "method": "", "path": "", "status": -(2**31), "bytes": -(2**63), "user_agent": ""},
        {
            "event_time": 2**63 - 1,
            "ip": "::1",
            "method": "GÉT",
            "path": "/ü/中",
            "status": 2**31 - 1,
            "bytes": 2**63 - 1,
            "user_agent": "x" * 5000,
        },
        {"event_time": 0, "ip": "1.2.3.4", "method": "GET", "path": "/", "status": 0, "bytes": 0, "user_agent": "ua"},
    ]
    values: list[bytes | None] = [ACCESS_EVENT_SERDE.encode(r) for r in records]  # type: ignore[arg-type]
    decoded, dead = decode_batch(source_batch(values), ALL_FIELDS)
    assert (decoded.to_pylist(), dead) == (expected(values, ALL_FIELDS)[0], [])


def test_bad_records_are_dead_letters_and_the_rest_keeps_its_order() -> None:
    good = events(6)
    wrong_schema = bytearray(good[1])
    wrong_schema[5] ^= 0xFF
    bad_utf8 = bytearray(good[2])
    bad_utf8[bad_utf8.index(b"GET") if b"GET" in bad_utf8 else 20] = 0xFF
    values: list[bytes | None] = [
        good[0],
        bytes(wrong_schema),  # another schema's fingerprint
        good[3],
        good[4][:-3],  # truncated
        good[4] + b"\x00",  # trailing byte
        None,  # tombstone
        b"",
        b"\xc3\x01",  # a header cut short
        bytes(bad_utf8),
        good[5][:10] + b"\xff" * 12,  # a varint longer than 10 bytes
        good[0],
    ]
    decoded, dead = decode_batch(source_batch(values), ALL_FIELDS)
    rows, dead_offsets = expected(values, ALL_FIELDS)
    assert decoded.to_pylist() == rows
    assert [d.offset for d in dead] == dead_offsets
    assert all(d.reason for d in dead)


def test_an_int_out_of_range_goes_to_the_serde() -> None:
    """status is an Avro int: a 5-byte varint beyond 32 bits is left to the per-record decoder."""
    good = ACCESS_EVENT_SERDE.encode(
        {"event_time": 1, "ip": "a", "method": "b", "path": "c", "status": 7, "bytes": 1, "user_agent": ""}
    )
    assert good[-3:] == b"\x0e\x02\x00"  # status 7, bytes 1, an empty user_agent: the layout assumed here
    too_big = good[:-3] + b"\xff\xff\xff\xff\x7f" + b"\x02\x00"
    values: list[bytes | None] = [too_big, good]
    decoded, dead = decode_batch(source_batch(values), ALL_FIELDS)
    rows, dead_offsets = expected(values, ALL_FIELDS)
    assert decoded.to_pylist() == rows
    assert [d.offset for d in dead] == dead_offsets


def test_random_corruption_never_makes_the_two_paths_disagree() -> None:
    rng = random.Random(11)
    values: list[bytes | None] = []
    for value in events(400, seed=5):
        mutated = bytearray(value)
        for _ in range(rng.randrange(0, 3)):
            action = rng.randrange(3)
            if action == 0 and mutated:
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
            elif action == 1 and mutated:
                del mutated[rng.randrange(len(mutated)) :]
            else:
                mutated.insert(rng.randrange(len(mutated) + 1), rng.randrange(256))
        values.append(bytes(mutated))
    decoded, dead = decode_batch(source_batch(values), ALL_FIELDS)
    rows, dead_offsets = expected(values, ALL_FIELDS)
    assert decoded.to_pylist() == rows
    assert [d.offset for d in dead] == dead_offsets


def test_the_end_of_input_row_passes_with_the_end_of_time_and_passthrough_columns_follow() -> None:
    good = events(3)
    marker = b'{"source":"s","end_offsets":{"0":3}}'
    batch = source_batch([good[0], good[1], marker, good[2]], ends=[False, False, True, False])
    batch = batch.append_column("batch_watermark", pa.array([10, 11, 12, 13], pa.int64()))
    decoded, dead = decode_batch(batch, ["event_time_ms", "status"], ["batch_watermark"])
    assert dead == []
    rows = decoded.to_pylist()
    assert [r["batch_watermark"] for r in rows] == [10, 11, 12, 13]
    assert rows[2]["event_time_ms"] == END_OF_INPUT_TIME_MS and rows[2]["status"] == 0
    assert rows[3]["event_time_ms"] == ACCESS_EVENT_SERDE.decode(good[2])["event_time"]


def test_ten_byte_varints_at_the_edge_of_a_long() -> None:
    """A long's 10th varint byte holds bit 63 only: 0x01 decodes, anything more goes to the serde."""
    value = events(1)[0]
    body = value[10:]
    width = next(i for i, byte in enumerate(body) if byte < 0x80) + 1  # event_time's varint
    edge = [value[:10] + b"\xff" * 9 + bytes([last]) + body[width:] for last in (0x01, 0x02, 0x7F)]
    values: list[bytes | None] = [*edge, value]
    decoded, dead = decode_batch(source_batch(values), ALL_FIELDS)
    rows, dead_offsets = expected(values, ALL_FIELDS)
    assert decoded.to_pylist() == rows
    assert [d.offset for d in dead] == dead_offsets
