"""The tailer's parser (onceflow.logproducer.formats) and the audit's independent recount
(onceflow.ipcount.audit.logfile) agree: same dead-letter kind strings, and the same outcome for
every line of the corpus, for drawn well-formed and damaged lines, and for a whole sample file."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onceflow.core.avro import AccessEvent
from onceflow.ipcount.audit.logfile import DEAD_LETTER_KINDS, LineScanner, Rejected, recount_file, tailer_lines
from onceflow.logproducer.formats import KINDS, LineParser, MalformedLine
from onceflow.logproducer.sample import write_sample_log
from onceflow.logproducer.tailer.reader import RotatingFileReader
from onceflow.testing.logproducer.corpus import BAD, GOOD
from onceflow.testing.logproducer.strategies import access_lines, json_access_lines

FIRST = {
    "httpd": GOOD[0].line,
    "json": b'{"remote_addr":"10.0.0.7","time_iso8601":"2026-11-22T14:30:01+00:00"}',
    "time-ip": b"1795357801123 10.0.0.7",
}


def outcomes(lines: list[bytes], fmt: str = "auto", max_line_bytes: int = 1 << 20) -> tuple[list[object], list[object]]:
    """Each line's outcome by both parsers (an event as a dict, or the kind of a malformed line)."""
    parser, scanner = LineParser(fmt, max_line_bytes=max_line_bytes), LineScanner(fmt, max_line_bytes=max_line_bytes)
    by_parser: list[object] = []
    by_scanner: list[object] = []
    for line in lines:
        try:
            by_parser.append(dict(parser.parse(line)))
        except MalformedLine as exc:
            by_parser.append(str(exc.kind))
        scanned = scanner.scan(line)
        by_scanner.append(scanned.kind if isinstance(scanned, Rejected) else {
            "event_time": scanned.event_time, "ip": scanned.ip, "method": scanned.method, "path": scanned.path,
            "status": scanned.status, "bytes": scanned.bytes, "user_agent": scanned.user_agent,
        })  # fmt: skip
    return by_parser, by_scanner


def test_the_kind_strings_are_the_same() -> None:
    assert set(KINDS) == set(DEAD_LETTER_KINDS)


def test_corpus_lines_agree() -> None:
    for case in GOOD:
        for fmt in ("auto", case.shape):
            by_parser, by_scanner = outcomes([case.line], fmt)
            assert by_parser == by_scanner == [case.event], (case.name, fmt)
    for bad in BAD:
        by_parser, by_scanner = outcomes([FIRST[bad.grammar], bad.line])
        assert by_parser[1] == by_scanner[1] == bad.kind, bad.name


def test_explicit_formats_agree_on_every_corpus_line() -> None:
    lines = [case.line for case in GOOD] + [case.line for case in BAD]
    for fmt in ("common", "combined", "main", "json", "time-ip"):
        by_parser, by_scanner = outcomes(lines, fmt)
        assert by_parser == by_scanner, fmt


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(access_lines())
def test_drawn_lines_agree(case: tuple[bytes, AccessEvent]) -> None:
    line, event = case
    by_parser, by_scanner = outcomes([line])
    assert by_parser == by_scanner == [event]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_access_lines())
def test_drawn_json_lines_agree(case: tuple[bytes, AccessEvent]) -> None:
    line, event = case
    by_parser, by_scanner = outcomes([line])
    assert by_parser == by_scanner == [event]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    json_access_lines(),
    st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(b'{}[]":,-.0t1 \\\xc3')), max_size=4),
)
def test_damaged_json_lines_agree(case: tuple[bytes, AccessEvent], damage: list[tuple[int, int]]) -> None:
    line = bytearray(case[0])
    for position, byte in damage:
        line[position % len(line)] = byte
    by_parser, by_scanner = outcomes([FIRST["json"], bytes(line)])
    assert by_parser == by_scanner


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(access_lines(), st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(b' "\\[]-x0:/+\t\xc3')), max_size=4))
def test_damaged_lines_agree(case: tuple[bytes, AccessEvent], damage: list[tuple[int, int]]) -> None:
    line = bytearray(case[0])
    for position, byte in damage:
        line[position % len(line)] = byte
    by_parser, by_scanner = outcomes([FIRST["httpd"], bytes(line)])
    assert by_parser == by_scanner


def test_a_sample_file_recounts_to_its_truth(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    truth = write_sample_log(log, 4000, seed=5, malformed_ratio=0.01)
    recount = recount_file(log)
    assert (recount.lines, recount.events, recount.dead_letters) == (truth.lines, truth.events, truth.malformed)
    assert recount.counts == truth.counts
    assert recount.max_event_time == truth.max_event_time
    lines = list(tailer_lines(log.read_bytes()))
    by_parser, by_scanner = outcomes(lines)
    assert by_parser == by_scanner


def test_long_lines_come_in_pieces_as_the_tailer_hands_them_on(tmp_path: Path) -> None:
    good = GOOD[0].line
    data = good + b"\n" + b"x" * 250 + b"\n" + b"y" * 200 + b"\n" + good + b"\r\n" + b"\n" + good
    assert [len(piece) for piece in tailer_lines(data, 100)] == [len(good), 100, 100, 50, 100, 100, len(good) + 1, 0,
                                                               len(good)]  # fmt: skip
    log = tmp_path / "long.log"
    log.write_bytes(data)
    reader = RotatingFileReader(log, allowed=[tmp_path], max_line_bytes=100)
    reader.open(None)
    read = [line.data for line in reader.read(100)]
    rest = reader.read_rest()
    assert [*read, *([rest.data] if rest is not None else [])] == list(tailer_lines(data, 100))
    recount = recount_file(log, max_line_bytes=100)
    assert (recount.lines, recount.events) == (9, 3)
    assert recount.dead_letters == {"too_long": 4, "unrecognised": 1, "empty": 1}
    by_parser, by_scanner = outcomes(list(tailer_lines(data, 100)), max_line_bytes=100)
    assert by_parser == by_scanner
