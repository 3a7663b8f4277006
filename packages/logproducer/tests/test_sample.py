"""The sample log: every stock variant is in it, its truth is what the tailer's parser makes of it,
event times never go back by 3 s or more, and the same seed writes the same bytes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from onceflow.cli.app import main as onceflow
from onceflow.logproducer.formats import LineParser, MalformedLine
from onceflow.logproducer.sample import write_sample_log


def test_the_truth_is_what_the_parser_counts(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    truth = write_sample_log(log, 20_000, seed=3)
    raw = log.read_bytes().split(b"\n")
    assert raw[-1] == b""
    lines = raw[:-1]
    parser = LineParser("auto")
    counts: Counter[tuple[int, str]] = Counter()
    malformed: Counter[str] = Counter()
    newest = 0
    for line in lines:
        try:
            event = parser.parse(line)
        except MalformedLine as exc:
            malformed[exc.kind] += 1
            continue
        t = event["event_time"]
        assert newest - t < 3000
        newest = max(newest, t)
        counts[(t - t % truth.window_ms, event["ip"])] += 1
    assert (len(lines), truth.lines, truth.events) == (20_000, 20_000, 20_000 - 100)
    assert dict(malformed) == truth.malformed
    assert set(truth.malformed) == {
        "bad_timestamp", "bad_status", "bad_bytes", "bad_ip", "bad_quoting", "not_utf8", "empty", "unrecognised",
    }  # fmt: skip
    assert dict(counts) == truth.counts
    assert truth.max_event_time == newest


def test_every_variant_is_in_the_sample(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    write_sample_log(log, 20_000, seed=4)
    data = log.read_bytes()
    for variant in [
        b'\\"Quoted Bot\\"',  # Apache-escaped quote in a user agent
        b"\\x22Quoted Bot\\x22",  # nginx-escaped
        b'"\\x16\\x03\\x01',  # TLS handshake on a plain port
        b'] "-" ',  # no request
        b'] "" ',  # empty request
        b"\n::1 - - [",
        b"\n::ffff:10.",
        b"\n2001:db8:",
        b" +1400] ",
        b" -1200] ",
        b" +0530] ",
        b' "203.0.113.9, 198.51.100.2"',  # nginx main's x_forwarded_for
        b' - "-" "',  # bytes "-"
        b"\r\n",
    ]:
        assert variant in data, variant
    lines = data.split(b"\n")
    assert any(len(line) > 10_000 for line in lines)
    assert any(line.count(b'"') == 2 for line in lines)  # Apache common: only the request is quoted


def test_the_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.log", tmp_path / "b.log", tmp_path / "c.log"
    assert write_sample_log(a, 500, seed=1) == write_sample_log(b, 500, seed=1)
    write_sample_log(c, 500, seed=2)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()


def test_the_sample_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, truth = tmp_path / "access.log", tmp_path / "truth.csv"
    argv = ["logproducer", "sample", "--lines", "2000", "--seed", "9", "--out", str(out), "--truth", str(truth)]
    assert onceflow(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["lines"], summary["events"], sum(summary["malformed"].values())) == (2000, 1990, 10)
    assert len(out.read_bytes().split(b"\n")) == 2001
    rows = truth.read_text().splitlines()
    assert rows[0] == "window_start,window_end,ip,count"
    assert sum(int(row.rsplit(",", 1)[1]) for row in rows[1:]) == 1990
    assert onceflow(["logproducer", "sample", "--lines", "-1", "--seed", "9", "--out", str(out)]) == 2
