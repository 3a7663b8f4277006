"""A dead letter always fits in a Kafka message: the value is the line cut to a bound, and headers
carry the kind, the reason, the whole line's length and SHA-256."""

from __future__ import annotations

import hashlib

from onceflow.logproducer.dead_letter import (
    KIND_HEADER,
    OFFSET_HEADER,
    ORIGINAL_LENGTH_HEADER,
    ORIGINAL_SHA256_HEADER,
    REASON_HEADER,
    SOURCE_HEADER,
    dead_letter_record,
)


def letter(line: bytes, reason: str = "bad client ip 'x'", **kwargs: int) -> dict[str, bytes]:
    record = dead_letter_record(
        "dlq", line, reason, kind="bad_ip", source="/var/log/access.log", line_offset=42,
        source_partition={"file": "/var/log/access.log"}, source_offset={"offset": 99}, **kwargs,
    )  # fmt: skip
    assert record.topic == "dlq"
    assert record.key is None
    return {"value": record.value or b"", **dict(record.headers or [])}


def test_a_short_line_is_the_whole_value() -> None:
    got = letter(b"999.1.1.1 - - [...]")
    assert got == {
        "value": b"999.1.1.1 - - [...]",
        REASON_HEADER: b"bad client ip 'x'",
        KIND_HEADER: b"bad_ip",
        ORIGINAL_LENGTH_HEADER: b"19",
        ORIGINAL_SHA256_HEADER: hashlib.sha256(b"999.1.1.1 - - [...]").hexdigest().encode(),
        SOURCE_HEADER: b"/var/log/access.log",
        OFFSET_HEADER: b"42",
    }


def test_a_huge_line_is_cut_and_described() -> None:
    line = b"x" * 1_048_576
    got = letter(line, reason="r" * 5000)
    assert got["value"] == line[: 64 * 1024]
    assert int(got[ORIGINAL_LENGTH_HEADER]) == len(line)
    assert got[ORIGINAL_SHA256_HEADER] == hashlib.sha256(line).hexdigest().encode()
    assert sum(len(v) for v in got.values()) < 70 * 1024
    assert letter(line, max_value_bytes=10)["value"] == b"x" * 10
