"""Line formats: every stock nginx/Apache variant of the corpus is its exact event, every malformed
line says its kind and why; auto decides per file; explicit formats check the trailing fields."""

from __future__ import annotations

import pytest

from onceflow.core.avro import ACCESS_EVENT_SERDE, AccessEvent
from onceflow.logproducer.encoding import AccessEventEncoder, TimestampEncoder, encode_long
from onceflow.logproducer.formats import KINDS, FormatDetector, LineParser, MalformedKind, MalformedLine, unescape
from onceflow.testing.logproducer.corpus import BAD, GOOD, BadLine, GoodLine

COMBINED = b'10.0.0.7 - - [22/Nov/2026:14:30:01 +0000] "GET /index.html HTTP/1.1" 200 612 "-" "curl/8.5.0"'
COMMON = b'10.0.0.7 - - [22/Nov/2026:14:30:01 +0000] "GET /index.html HTTP/1.1" 200 612'
MAIN = COMBINED + b' "203.0.113.9"'
TIME_IP = b"1795357801123 10.0.0.7"
JSON = b'{"remote_addr":"10.0.0.7","time_iso8601":"2026-11-22T14:30:01+00:00"}'
FIRST = {"httpd": COMBINED, "json": JSON, "time-ip": TIME_IP}


def decided(grammar: str) -> LineParser:
    """An auto parser that has seen the first line of a file in ``grammar``."""
    parser = LineParser("auto")
    parser.parse(FIRST[grammar])
    assert parser.detected == grammar
    return parser


@pytest.mark.parametrize("case", GOOD, ids=lambda c: c.name)
def test_every_stock_variant_is_its_event(case: GoodLine) -> None:
    assert LineParser("auto").parse(case.line) == case.event
    if case.shape != "time-ip":
        assert LineParser(case.shape).parse(case.line) == case.event


@pytest.mark.parametrize("case", BAD, ids=lambda c: c.name)
def test_malformed_lines_say_what_is_wrong(case: BadLine) -> None:
    with pytest.raises(MalformedLine) as info:
        decided(case.grammar).parse(case.line)
    assert (info.value.kind, case.reason in info.value.reason) == (case.kind, True), info.value.reason
    assert info.value.kind in KINDS


def test_the_corpus_covers_every_kind_but_too_long() -> None:
    assert {case.kind for case in BAD} == KINDS - {MalformedKind.TOO_LONG}


@pytest.mark.parametrize(
    ("fmt", "line", "reason"),
    [
        ("common", COMBINED, "expected no quoted field after the byte count (common), found 2"),
        ("combined", COMMON, 'after the byte count ("referer" "user-agent"), found 0'),
        ("main", COMBINED, "expected at least 3 quoted fields after the byte count"),
        ("time-ip", COMBINED, "expected 'TIME IP', got 12 fields"),
        ("combined", TIME_IP, "not an access log line"),
    ],
)
def test_an_explicit_format_rejects_the_other_shapes(fmt: str, line: bytes, reason: str) -> None:
    with pytest.raises(MalformedLine) as info:
        LineParser(fmt).parse(line)
    assert (info.value.kind, reason in info.value.reason) == (MalformedKind.UNRECOGNISED, True), info.value.reason


def test_explicit_formats_accept_longer_shapes() -> None:
    expected = LineParser("combined").parse(COMBINED)
    assert LineParser("combined").parse(MAIN) == LineParser("main").parse(MAIN) == expected


def test_auto_decides_per_file_and_misfits_do_not_switch_it() -> None:
    parser = LineParser("auto")
    assert parser.detected is None
    with pytest.raises(MalformedLine):
        parser.parse(b"garbage before the first good line")
    assert parser.detected is None
    assert parser.parse(COMMON)["path"] == "/index.html"
    assert parser.detected == "httpd"
    # common, combined and main all fit the file once it is httpd (a reload may change log_format)
    assert parser.parse(MAIN)["user_agent"] == parser.parse(COMBINED)["user_agent"] == "curl/8.5.0"
    with pytest.raises(MalformedLine) as info:
        parser.parse(TIME_IP)  # fits time-ip, but this file is httpd
    assert info.value.kind == MalformedKind.UNRECOGNISED
    assert parser.detected == "httpd"
    parser.reset()
    assert parser.parse(TIME_IP)["event_time"] == 1795357801123
    assert parser.detected == "time-ip"
    with pytest.raises(MalformedLine):
        parser.parse(COMBINED)


def test_the_detector_decides_from_the_first_fitting_lines() -> None:
    assert FormatDetector().detect(["", "junk", COMBINED.decode(), TIME_IP.decode()]) == "httpd"
    assert FormatDetector().detect(["junk", TIME_IP.decode(), COMBINED.decode()]) == "time-ip"
    assert FormatDetector().detect(["junk", "more junk"]) is None


def test_too_long_is_a_piece_of_a_longer_line() -> None:
    parser = LineParser("auto", max_line_bytes=len(COMBINED) + 1)
    assert parser.parse(COMBINED)["status"] == 200
    with pytest.raises(MalformedLine) as info:
        parser.parse(COMBINED + b" ")
    assert info.value.kind == MalformedKind.TOO_LONG
    assert "reaches max.line.bytes" in info.value.reason


def test_reasons_stay_short_for_huge_fields() -> None:
    with pytest.raises(MalformedLine) as info:
        decided("httpd").parse(b"x" * 500_000 + b' - - [22/Nov/2026:14:30:01 +0000] "GET / HTTP/1.1" 200 1')
    assert info.value.kind == MalformedKind.BAD_IP
    assert len(info.value.reason) < 300


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("plain", "plain"),
        ('\\"q\\" \\\\', '"q" \\'),
        ("\\x22\\x5C\\x41", '"\\A'),
        ("\\xc3\\xa9", "é"),
        ("\\xff", "\\xff"),
        ("\\q and \\x4", "\\q and \\x4"),
        ("\\n\\t\\r\\b\\v\\f", "\n\t\r\b\v\f"),
    ],
)
def test_unescape(field: str, text: str) -> None:
    assert unescape(field) == text


def test_time_ip_fractions_are_exact() -> None:
    for line, millis in [(b"1795357801.123 ::1", 1795357801123), (b"1795357801.9999 ::1", 1795357801999)]:
        assert LineParser("time-ip").parse(line)["event_time"] == millis
    for line in (b"nan ::1", b"inf ::1", b"-5 ::1"):
        with pytest.raises(MalformedLine) as info:
            LineParser("time-ip").parse(line)
        assert info.value.kind == MalformedKind.BAD_TIMESTAMP


def test_fast_encoder_matches_the_serde() -> None:
    encoder = AccessEventEncoder()
    events: list[AccessEvent] = [LineParser("auto").parse(case.line) for case in GOOD]
    for event in events:
        assert encoder.encode(event) == ACCESS_EVENT_SERDE.encode(event)
    stamp = TimestampEncoder()
    for value in (0, 1, 8191, 8192, 1795357801123, 2**40 + 12345):
        assert stamp(value) == encode_long(value)
