"""The tailer's parser (onceflow.logproducer.formats) and the audit's independent recount
(onceflow.ipcount.audit.logfile) agree: same dead-letter kind strings, and the same outcome for
every line of the corpus, for drawn well-formed and damaged lines, and for a whole sample file."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onceflow.core.avro import AccessEvent
from onceflow.ipcount.audit.logfile import (
    DEAD_LETTER_KINDS,
    LineScanner,
    Rejected,
    container_lines,
    recount_file,
    tailer_lines,
)
from onceflow.logproducer.formats import KINDS, LineParser, MalformedLine
from onceflow.logproducer.sample import write_sample_log
from onceflow.logproducer.tailer.container_lines import ContainerLines, Refused
from onceflow.logproducer.tailer.reader import RotatingFileReader
from onceflow.testing.logproducer.container import cri_entries, docker_entries
from onceflow.testing.logproducer.corpus import BAD, GOOD
from onceflow.testing.logproducer.strategies import access_lines, json_access_lines

FIRST = {
    "httpd": GOOD[0].line,
    "json": b'{"remote_addr":"10.0.0.7","time_iso8601":"2026-11-22T14:30:01+00:00"}',
    "time-ip": b"1795357801123 10.0.0.7",
}


def outcomes(lines: list[bytes], fmt: str = "auto", max_line_bytes: int = 1 << 20) -> tuple[list[object], list[object]]:
    """Each line's outcome by both parsers (an event as a dict, or the kind of a malformed line)."""
    parser = LineParser(fmt, max_line_bytes=max_line_bytes)
    by_parser = [_parsed(parser, line) for line in lines]
    return by_parser, _scanned(LineScanner(fmt, max_line_bytes=max_line_bytes), lines)


def _parsed(parser: LineParser, line: bytes) -> object:
    try:
        return dict(parser.parse(line))
    except MalformedLine as exc:
        return str(exc.kind)


def _scanned(scanner: LineScanner, lines: Sequence[bytes | Rejected]) -> list[object]:
    outcomes: list[object] = []
    for line in lines:
        scanned = line if isinstance(line, Rejected) else scanner.scan(line)
        outcomes.append(scanned.kind if isinstance(scanned, Rejected) else dict(scanned))
    return outcomes


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


@st.composite
def container_logs(draw: st.DrawFn) -> bytes:
    """A Docker or CRI log of drawn access lines cut into small pieces, stderr entries between the
    pieces, and some entries damaged or blank."""
    wrap = draw(st.sampled_from([docker_entries, cri_entries]))
    piece_bytes = draw(st.integers(8, 400))
    entries: list[bytes] = []
    for line, _ in draw(st.lists(access_lines(), min_size=1, max_size=6)):
        pieces = wrap(line.decode("utf-8", "surrogateescape").encode("utf-8", "replace").decode(), "stdout",
                      piece_bytes=piece_bytes)  # fmt: skip
        for piece in pieces:
            entries.append(piece)
            if draw(st.integers(0, 4)) == 0:
                entries.extend(wrap("2026/11/27 03:00:00 [error] 1#1: no such file", "stderr"))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(entries) - 1))
        damaged = bytearray(entries[at])
        damaged[draw(st.integers(0, len(damaged) - 1))] = draw(st.sampled_from(b' "{}\\nPF:x\xc3'))
        entries[at] = bytes(damaged)
    if draw(st.booleans()):
        entries.insert(draw(st.integers(0, len(entries))), b"")
    return b"\n".join(entries) + draw(st.sampled_from([b"\n", b""]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(container_logs(), st.sampled_from([1 << 20, 300]))
def test_container_logs_agree(data: bytes, max_line_bytes: int) -> None:
    """The tailer (reader, ContainerLines, LineParser) and the audit hand on the same lines with the
    same outcomes: pieces put together, entries refused, pieces still pending at the end."""
    with tempfile.TemporaryDirectory() as directory:
        log = Path(directory) / "0.log"
        log.write_bytes(data)
        reader = RotatingFileReader(log, allowed=[directory], max_line_bytes=max_line_bytes)
        reader.open(None)
        lines = ContainerLines("auto", max_line_bytes=max_line_bytes)
        handed = [item for line in reader.read(100_000) for item in lines.feed(line)]
        rest = reader.read_rest()
        handed += [*(lines.feed(rest) if rest is not None else []), *lines.finish()]
    parser = LineParser(max_line_bytes=max_line_bytes)
    by_tailer = [str(item.error.kind) if isinstance(item, Refused) else _parsed(parser, item.data) for item in handed]
    audited = list(container_lines(tailer_lines(data, max_line_bytes), "auto", max_line_bytes))
    assert by_tailer == _scanned(LineScanner(max_line_bytes=max_line_bytes), audited)
    recount = recount_file_bytes(data, max_line_bytes)
    assert recount == (len(by_tailer), sum(isinstance(o, dict) for o in by_tailer))


def recount_file_bytes(data: bytes, max_line_bytes: int) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as directory:
        log = Path(directory) / "0.log"
        log.write_bytes(data)
        recount = recount_file(log, max_line_bytes=max_line_bytes)
    return recount.lines, recount.events
