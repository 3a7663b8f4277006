"""AccessEvent values decoded column by column: numpy over the Arrow buffers, no Python per record.

An AccessEvent's single-object value is ``C3 01``, the 8-byte fingerprint, then the Avro body: a
zigzag varint (``event_time``), three strings (``ip``, ``method``, ``path``; each a varint length
and UTF-8 bytes), a varint (``status``, an Avro int), a varint (``bytes``) and a string
(``user_agent``). :func:`decode_access_events` reads every record of a batch at once, field by
field: each step moves a vector of read positions, one per record.

It accepts only what the per-record decoder (``ACCESS_EVENT_SERDE.decode``) decodes to the same
values, and says which records those are (``ok``): the right header, every varint within 10 bytes
(5 for the int) and within the record, string lengths within the record, no trailing bytes, valid
UTF-8. Every other record is left to the per-record decoder, which decodes it or names what is wrong
(a dead letter), so the two paths can never disagree on a record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

#: AccessEvent's fields in the order of the Avro body, with their Avro types.
BODY: tuple[tuple[str, str], ...] = (
    ("event_time", "long"),
    ("ip", "string"),
    ("method", "string"),
    ("path", "string"),
    ("status", "int"),
    ("bytes", "long"),
    ("user_agent", "string"),
)
_ARROW = {"long": pa.int64(), "int": pa.int32(), "string": pa.string()}
_INT32 = (-(2**31), 2**31 - 1)

Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Columns:
    """The decoded ``fields`` of the records where ``ok`` is true (in record order); the others are not decoded."""

    arrays: dict[str, pa.Array]
    ok: Mask


def _varints(data: npt.NDArray[np.uint8], pos: Ints, end: Ints, width: int) -> tuple[Ints, Ints, Mask]:
    """Zigzag varints at ``pos`` (at most ``width`` bytes, ending before ``end``): (values, next pos, ok).

    One vector step per byte of the longest varint, for every record at once.
    """
    last = max(len(data) - 1, 0)
    unsigned = np.zeros(len(pos), dtype=np.uint64)
    overflow = np.zeros(len(pos), dtype=np.bool_)
    length = np.zeros(len(pos), dtype=np.int64)
    going = np.ones(len(pos), dtype=np.bool_)
    for k in range(width):
        at = pos + k
        inside = at < end
        byte = np.where(inside, data[np.minimum(at, last)], np.uint8(0x80))
        if k == 9:  # the 10th byte of a long holds bit 63 only: more overflows
            overflow = going & (byte > 1)
            going &= ~overflow
        unsigned |= np.where(going, (byte & 0x7F).astype(np.uint64) << np.uint64(7 * k), np.uint64(0))
        length += going
        going &= ((byte & 0x80) != 0) & inside
        if not going.any():
            break
    # a varint still going after ``width`` bytes, or cut by the record's end, is not one
    ok: Mask = ~going & ~overflow & (pos + length <= end)
    values = (unsigned >> np.uint64(1)).astype(np.int64) ^ -(unsigned & np.uint64(1)).astype(np.int64)
    return values, pos + length, ok


def _strings(data: npt.NDArray[np.uint8], starts: Ints, lengths: Ints) -> pa.Array:
    """A string array of ``data[start:start + length]`` per record; raises ArrowInvalid on bad UTF-8."""
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    gather = np.repeat(starts - offsets[:-1], lengths) + np.arange(total, dtype=np.int64)
    chars = data[gather] if total else np.zeros(0, dtype=np.uint8)
    array = pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(chars.tobytes()))
    array.validate(full=True)
    return array.cast(pa.string())


def _ascii(data: npt.NDArray[np.uint8], starts: Ints, lengths: Ints) -> bool:
    """Whether every byte of every span is ASCII (so valid UTF-8), without copying the spans."""
    spans = lengths > 0
    if not spans.any():
        return True
    begin, stop = starts[spans], starts[spans] + lengths[spans]
    bounds = np.empty(2 * len(begin), dtype=np.int64)
    bounds[0::2], bounds[1::2] = begin, stop
    padded = np.append(data, np.uint8(0))  # reduceat may be handed the end of the buffer
    return bool((np.maximum.reduceat(padded, bounds)[0::2] < 0x80).all())


def decode_access_events(values: pa.Array, header: bytes, fields: Sequence[str]) -> Columns:
    """Decode the AccessEvent ``fields`` (body names) of ``values`` (binary) for every record it can vouch for."""
    count = len(values)
    if count == 0:
        return Columns({f: pa.array([], _ARROW[dict(BODY)[f]]) for f in fields}, np.zeros(0, dtype=np.bool_))
    binary = values.cast(pa.large_binary())
    validity, offsets_buffer, data_buffer = binary.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[binary.offset : binary.offset + count + 1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, dtype=np.uint8)
    starts, end = offsets[:-1], offsets[1:]
    ok: Mask = (end - starts) >= len(header)
    if validity is not None:
        ok &= ~np.asarray(binary.is_null())
    # the header: C3 01 + this schema's fingerprint
    head = np.frombuffer(header, dtype=np.uint8)
    at = np.clip(starts[:, None] + np.arange(len(header)), 0, max(len(data) - 1, 0))
    ok &= (data[at] == head[None, :]).all(axis=1) if len(data) else False
    pos = starts + len(header)
    numbers: dict[str, Ints] = {}
    spans: dict[str, tuple[Ints, Ints]] = {}
    for name, kind in BODY:
        width = 5 if kind == "int" else 10
        value, after, fine = _varints(data, pos, end, width)
        ok &= fine
        if kind == "string":
            ok &= (value >= 0) & (after + np.maximum(value, 0) <= end)
            length = np.where(ok, value, 0)
            spans[name] = (after, length)
            pos = np.where(ok, after + length, end)
        else:
            if kind == "int":
                ok &= (value >= _INT32[0]) & (value <= _INT32[1])
            numbers[name] = value
            pos = np.where(ok, after, end)
    ok &= pos == end
    strings: dict[str, pa.Array] = {}
    for name, (start, length) in spans.items():
        try:
            if name in fields:
                strings[name] = _strings(data, start[ok], length[ok])
            elif not _ascii(data, start[ok], length[ok]):  # not read, but the serde would check it
                _strings(data, start[ok], length[ok])
        except pa.ArrowInvalid:  # invalid UTF-8 somewhere: leave the whole batch to the per-record decoder
            ok = np.zeros(count, dtype=np.bool_)
            return Columns({f: pa.array([], _ARROW[dict(BODY)[f]]) for f in fields}, ok)
    arrays: dict[str, pa.Array] = {}
    for name in fields:
        kind = dict(BODY)[name]
        arrays[name] = strings[name] if kind == "string" else pa.array(numbers[name][ok], _ARROW[kind])
    return Columns(arrays, ok)
