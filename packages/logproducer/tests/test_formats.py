"""Line formats: nginx combined and the lesson's minimal "time ip"; malformed lines say why."""

from __future__ import annotations

import pytest

from onceflow.core.avro import ACCESS_EVENT_SERDE, AccessEvent
from onceflow.logproducer.encoding import AccessEventEncoder, TimestampEncoder, encode_long
from onceflow.logproducer.formats import LineParser, MalformedLine

COMBINED = b'10.0.0.7 - - [22/Nov/2026:14:30:01 +0000] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0"'


def test_combined() -> None:
    event = LineParser("combined").parse(COMBINED)
    assert event == AccessEvent(
        event_time=1795357801000, ip="10.0.0.7", method="GET", path="/index.html", status=200, bytes=612,
        user_agent="curl/8.5.0",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("line", "millis"),
    [
        (b"1795357801123 10.0.0.7", 1795357801123),
        (b"1795357801.5 10.0.0.7", 1795357801500),
        (b"2026-11-22T14:30:01.123Z 10.0.0.7", 1795357801123),
        (b"2026-11-22 14:30:01 10.0.0.7\r", 1795357801000),
    ],
)
def test_time_ip(line: bytes, millis: int) -> None:
    event = LineParser("auto").parse(line)
    assert (event["event_time"], event["ip"], event["status"]) == (millis, "10.0.0.7", 0)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"", "empty line"),
        (b"garbage", "expected 'TIME IP'"),
        (b"yesterday 10.0.0.7", "bad time 'yesterday'"),
        (b"1795357801123 not-an-ip", "bad client ip 'not-an-ip'"),
        (b'10.0.0.7 - - [22/Nov/2026:14:30:01 +0000] "GET" 200 612', "bad request 'GET'"),
        (b'10.0.0.7 - - [32/Nov/2026:14:30:01 +0000] "GET / HTTP/1.1" 200 1', "bad time"),
        (b"\xff\xfe 10.0.0.7", "not UTF-8"),
    ],
)
def test_malformed_lines_say_why(line: bytes, reason: str) -> None:
    with pytest.raises(MalformedLine) as info:
        LineParser("auto").parse(line)
    assert reason in info.value.reason


def test_fast_encoder_matches_the_serde() -> None:
    encoder = AccessEventEncoder()
    event = LineParser("combined").parse(COMBINED)
    assert encoder.encode(event) == ACCESS_EVENT_SERDE.encode(event)
    stamp = TimestampEncoder()
    for value in (0, 1, 8191, 8192, 1795357801123, 2**40 + 12345):
        assert stamp(value) == encode_long(value)
