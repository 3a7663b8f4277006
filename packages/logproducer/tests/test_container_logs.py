"""Container log files (Docker json-file, Kubernetes CRI): the access log inside is tailed exactly once,
a line the runtime split into pieces counts once, and lines that are not access-log lines (the
server's error log on stderr, broken entries) are dead letters with their reason.

The unit tests read real files through :class:`RotatingFileReader`; the last test runs a real worker
process on the embedded broker and ``kill -9``\\ s it while long lines are being put back together.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from onceflow.broker.embedded import EmbeddedBroker
from onceflow.core import topics
from onceflow.core.avro import ACCESS_EVENT_SERDE
from onceflow.logproducer.formats import LineParser, MalformedLine
from onceflow.logproducer.formats.container import container_kind, read_entry
from onceflow.logproducer.tailer.container_lines import HOLD_FACTOR, HOLD_LINES, ContainerLines, Refused
from onceflow.logproducer.tailer.reader import Line, RotatingFileReader
from onceflow.runtime.storage import KafkaOffsetBackingStore
from onceflow.testing.broker.clients import create_topic
from onceflow.testing.logproducer.container import cri_entries, docker_entries
from onceflow.testing.runtime import WorkerProcess, read_records

LINE = '172.17.0.{a} - - [27/Nov/2026:03:{m:02d}:{s:02d} +0000] "GET /p/{n}{pad} HTTP/1.1" 200 615 "-" "curl/8.5.0" "-"'
ERROR_LINE = '2026/11/27 03:00:00 [error] 29#29: *1 open() "/usr/share/nginx/html/x" failed (2: No such file)'
WRAP = {"docker": docker_entries, "cri": cri_entries}


def _line(n: int, pad: int = 0) -> str:
    return LINE.format(a=n % 200 + 1, m=(n // 60) % 60, s=n % 60, n=n, pad="?" + "q&<>é" * pad if pad else "")


def _read(path: Path, mode: str = "auto", max_line_bytes: int = 1 << 20) -> list[Line | Refused]:
    reader = RotatingFileReader(path, allowed=[path.parent], max_line_bytes=max_line_bytes)
    reader.open(None)
    lines = ContainerLines(mode, max_line_bytes=max_line_bytes)
    out: list[Line | Refused] = []
    for line in reader.read(100_000):
        out.extend(lines.feed(line))
    rest = reader.read_rest()
    if rest is not None:
        out.extend(lines.feed(rest))
    return out + lines.finish()


def _texts(items: list[Line | Refused]) -> list[str]:
    return [f"refused {item.error.kind}" if isinstance(item, Refused) else item.data.decode() for item in items]


@pytest.mark.parametrize("kind", ["docker", "cri"])
def test_pieces_of_a_long_line_are_put_back_together_and_count_once(tmp_path: Path, kind: str) -> None:
    wrap = WRAP[kind]
    long_line = _line(1, pad=10_000)  # 60 KB: four pieces
    entries = [*wrap(_line(0)), *wrap(long_line, n=1), *wrap(_line(2), n=9)]
    assert len(entries) == 6
    log = tmp_path / "0.log"
    log.write_bytes(b"\n".join(entries) + b"\n")
    items = _read(log)
    assert _texts(items) == [_line(0), long_line, _line(2)]
    assert all(isinstance(item, Line) for item in items)
    middle = items[1]
    assert isinstance(middle, Line)
    assert middle.original == b"\n".join(entries[1:5]), "a dead letter would keep the file's bytes"
    assert middle.start == len(entries[0]) + 1
    assert middle.position.offset == sum(len(e) + 1 for e in entries[:5])
    parser = LineParser()
    assert [parser.parse(item.data)["path"] for item in items if isinstance(item, Line)][::2] == ["/p/0", "/p/2"]


@pytest.mark.parametrize("kind", ["docker", "cri"])
def test_interleaved_streams_hold_back_until_no_piece_is_pending(tmp_path: Path, kind: str) -> None:
    """stderr lines written between the pieces of a stdout line are handed on after it, all at the
    position after its last piece: no position is committed past a piece not yet sent."""
    wrap = WRAP[kind]
    long_pieces = wrap(_line(1, pad=5000), n=1)  # two pieces
    assert len(long_pieces) == 2
    entries = [*wrap(_line(0)), long_pieces[0], *wrap(ERROR_LINE, "stderr", n=3), long_pieces[1], *wrap(_line(2))]
    log = tmp_path / "0.log"
    log.write_bytes(b"\n".join(entries) + b"\n")
    reader = RotatingFileReader(log, allowed=[tmp_path])
    reader.open(None)
    lines = ContainerLines("auto", max_line_bytes=1 << 20)
    handed = [lines.feed(line) for line in reader.read(100)]
    assert [_texts(h) for h in handed] == [[_line(0)], [], [], [ERROR_LINE, _line(1, pad=5000)], [_line(2)]]
    after_last_piece = sum(len(e) + 1 for e in entries[:4])
    assert {item.position.offset for item in handed[3] if isinstance(item, Line)} == {after_last_piece}
    assert lines.finish() == []


def test_a_piece_never_completed_is_handed_on_after_hold_lines_and_at_the_end(tmp_path: Path) -> None:
    first = docker_entries(_line(0, pad=5000))[0]  # a piece whose last piece never comes
    stderr = [docker_entries(f"stderr line {n}", "stderr")[0] for n in range(HOLD_LINES + 5)]
    log = tmp_path / "0.log"
    log.write_bytes(b"\n".join([first, *stderr, first]) + b"\n")
    reader = RotatingFileReader(log, allowed=[tmp_path])
    reader.open(None)
    lines = ContainerLines("docker", max_line_bytes=1 << 20)
    handed = [lines.feed(line) for line in reader.read(10_000)]
    released = [n for n, h in enumerate(handed) if h]
    # the piece's own line is the first of the HOLD_LINES lines; after the last, nothing is held
    assert released == list(range(HOLD_LINES - 1, HOLD_LINES + 6))
    assert len(handed[HOLD_LINES - 1]) == HOLD_LINES, "the held stderr lines and the piece as it is"
    assert handed[-1] == [], "the second piece is pending again"
    rest = lines.finish()
    assert [len(item.data) for item in rest if isinstance(item, Line)] == [len(json.loads(first)["log"].encode())]


def test_what_is_held_stays_bounded_in_bytes_too(tmp_path: Path) -> None:
    """With max.line.bytes 1000, at most 4000 bytes of lines pass while a piece is pending."""
    first = docker_entries("x" * 500, piece_bytes=100)[0]
    stderr = docker_entries("e" * 300, "stderr")[0]  # 383 bytes a line
    log = tmp_path / "0.log"
    log.write_bytes(b"\n".join([first, *[stderr] * 20]) + b"\n")
    reader = RotatingFileReader(log, allowed=[tmp_path], max_line_bytes=1000)
    reader.open(None)
    lines = ContainerLines("docker", max_line_bytes=1000)
    handed = [lines.feed(line) for line in reader.read(100)]
    released = [n for n, h in enumerate(handed) if h]
    held = (HOLD_FACTOR * 1000 - len(first)) // len(stderr) + 1  # the line that reaches the bound
    assert released[0] == held, released
    assert len(handed[held]) == held + 1, "the held stderr lines and the piece as it is"


def test_pieces_reaching_max_line_bytes_make_a_too_long_line(tmp_path: Path) -> None:
    entries = docker_entries(_line(0, pad=2000), piece_bytes=1024)
    log = tmp_path / "0.log"
    log.write_bytes(b"\n".join(entries) + b"\n")
    items = _read(log, max_line_bytes=4096)
    sizes = [len(item.data) for item in items if isinstance(item, Line)]
    assert all(size >= 4096 for size in sizes[:-1]) and sum(sizes) == len(_line(0, pad=2000).encode())
    parser = LineParser(max_line_bytes=4096)
    with pytest.raises(MalformedLine) as caught:
        parser.parse(items[0].data if isinstance(items[0], Line) else b"")
    assert caught.value.kind == "too_long"


def test_what_is_not_an_entry_is_refused_with_its_reason(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    good = docker_entries(_line(0))[0]
    log.write_bytes(
        b"\n".join([good, b'{"log": 5, "stream": "stdout"}', b"[1, 2]", b"{not json", b"", b"\xff\xfe", good])
    )
    items = _read(log)
    assert _texts(items) == [_line(0), *(f"refused {k}" for k in ("unrecognised",) * 3), "refused empty",
                             "refused not_utf8", _line(0)]  # fmt: skip
    reasons = [item.error.reason for item in items if isinstance(item, Refused)]
    assert reasons[0] == 'not a docker json-file entry: "log" and "stream" must be strings'
    assert reasons[1] == "not a docker json-file entry: a JSON list, not an object"
    assert reasons[2].startswith("not a docker json-file entry: 'Expecting property name")
    with pytest.raises(MalformedLine, match=r"not a CRI log entry \(<time> <stdout\|stderr> <F\|P> <line>\)"):
        read_entry("cri", "2026-11-27T03:00:00Z stdout 172.17.0.1 - -")


def test_auto_decides_per_file_by_its_first_line_that_is_not_blank() -> None:
    assert container_kind(docker_entries(_line(0))[0].decode()) == "docker"
    assert container_kind(cri_entries(_line(0))[0].decode()) == "cri"
    for plain in (_line(0), '{"remote_addr": "10.0.0.1", "time": "1795357801"}', "1795357801123 10.0.0.7",
                  "2026-11-27T03:00:00Z 10.0.0.7", '{"log": "x"}'):  # fmt: skip
        assert container_kind(plain) == "none", plain


def test_a_server_log_passes_unchanged(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_text(f"\n{_line(0)}\n{_line(1)}")
    for mode in ("auto", "none"):
        items = _read(log, mode)
        assert [item.data for item in items if isinstance(item, Line)] == [b"", _line(0).encode(), _line(1).encode()]
        assert all(item.original is None for item in items if isinstance(item, Line))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["docker", "cri"])
def test_a_container_log_is_tailed_exactly_once_across_kill_9(
    broker: EmbeddedBroker, tmp_path: Path, kind: str
) -> None:
    """The file grows in three parts, each ending between the pieces of a long line with a stderr line
    after its first piece. Each time the worker commits every line before that long line and nothing
    after it (the stderr line is held back), and is then ``kill -9``\\ ed; the next one resumes there."""
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, topics.SOURCE_TOPIC, 1, {"retention.ms": "-1"})
    wrap = WRAP[kind]
    count = 3000
    entries: list[bytes] = []
    #: (index of the long line's first piece, lines finished before it) for each long line.
    long_lines: list[tuple[int, int]] = []
    for n in range(count):
        if n % 50 == 7:  # a 40 KB line: three pieces, and an error-log line between two of them
            pieces = wrap(_line(n, pad=8000), n=n)
            long_lines.append((len(entries), n + len(long_lines)))
            entries += [pieces[0], *wrap(ERROR_LINE, "stderr", n=n), *pieces[1:]]
        else:
            entries += wrap(_line(n), n=n)
    log = tmp_path / "0.log"
    config = {"connector.class": "access-log-file", "file": str(log), "batch.max.lines": "37"}
    connector = tmp_path / "file.json"
    connector.write_text(json.dumps({"name": "file", "config": config}))
    worker = WorkerProcess(tmp_path / "worker", {"kafka": {"bootstrap_servers": bootstrap}}, [connector])
    store = KafkaOffsetBackingStore({"bootstrap.servers": bootstrap}, topics.CONNECT_OFFSETS_TOPIC)

    def committed_lines() -> int:
        offsets = store.offsets("file")
        return int(offsets[0][1]["lines"]) if offsets else 0

    def wait_for(lines: int) -> None:
        deadline = time.monotonic() + 120
        while committed_lines() < lines:
            assert time.monotonic() < deadline, worker.log_tail()
            time.sleep(0.2)

    written = 0
    try:
        for first_piece, finished_before in (long_lines[5], long_lines[20], long_lines[40]):
            with log.open("ab") as out:  # up to the stderr line after the long line's first piece
                out.write(b"".join(entry + b"\n" for entry in entries[written : first_piece + 2]))
            written = first_piece + 2
            worker.start()
            wait_for(finished_before)
            worker.kill()
            assert committed_lines() == finished_before, "nothing past the pending piece was committed"
        with log.open("ab") as out:
            out.write(b"".join(entry + b"\n" for entry in entries[written:]))
        worker.start()
        wait_for(count + len(long_lines))
    finally:
        worker.stop()
    events = [ACCESS_EVENT_SERDE.decode(r.value or b"") for r in read_records(bootstrap, topics.SOURCE_TOPIC)]
    numbers = sorted(int(e["path"].split("/")[2].split("?")[0]) for e in events)
    assert numbers == list(range(count)), "every line once, the long ones put back together"
    assert all(len(e["path"]) > 40_000 for e in events if e["path"].startswith(tuple(f"/p/{n}?" for n in (7, 57))))
    dead = read_records(bootstrap, topics.DEAD_LETTER_TOPIC)
    assert len(dead) == len(long_lines)
    assert all(ERROR_LINE.encode() in (r.value or b"").replace(b'\\"', b'"') for r in dead), "the file's bytes"
    final = store.offsets("file")[0][1]
    assert (final["lines"], final["events"], final["dead_letters"]) == (count + len(long_lines), count, len(long_lines))
