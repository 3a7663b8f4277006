"""End to end over a real-format access log: ``onceflow demo --input FILE`` (and ``--follow`` through a
rotation) counts every well-formed line exactly once in every sink, dead-letters exactly the malformed
ones, and closes the file's last windows at the end of input.

The log is :func:`onceflow.logproducer.sample.write_sample_log`: Apache common and combined, nginx
combined and main lines with escaped quotes and backslashes, ``\\xHH`` junk requests, ``-`` requests
and sizes, IPv4 and IPv6 clients, UTC offsets from -12:00 to +14:00, long URLs, and 0.5 % malformed
lines of every kind. Slow (a Spark JVM each); they still run in ``make test``.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections import Counter
from pathlib import Path

import pytest

from onceflow.logproducer.sample import SampleTruth, write_sample_log

from .demo_process import DemoProcess, verdicts

SINKS = ("kafka", "sqlite", "postgres", "consumer")
LINES = 20_000


def result_tables(run_dir: Path) -> dict[str, dict[tuple[int, str], int]]:
    """Every SQLite results table in the run directory: the SQLite sink's and the consumer store's."""
    tables: dict[str, dict[tuple[int, str], int]] = {}
    for path in sorted(run_dir.rglob("*.db")):
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            names = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in ("ip_counts", "results"):
                if table in names:
                    rows = db.execute(f"SELECT window_start, ip, count FROM {table}").fetchall()
                    counts = Counter[tuple[int, str]]()
                    for window_start, ip, count in rows:
                        assert (window_start, ip) not in counts, f"{path}:{table}: duplicate row {window_start} {ip}"
                        counts[(window_start, ip)] = count
                    tables[f"{path.relative_to(run_dir)}:{table}"] = dict(counts)
    return tables


def assert_exact(demo: DemoProcess, sample: SampleTruth, lines: int) -> None:
    output = demo.output
    assert verdicts(output) == {**dict.fromkeys(SINKS, "EXACT"), "lines": "EXACT", "overall": "EXACT"}, demo.tail()
    malformed = sum(sample.malformed.values())
    assert f"input: {lines} lines = {lines - malformed} events + {malformed} malformed" in output
    assert re.search(rf"dead letters in ip_count_dlq: {malformed} \(", output), demo.tail()
    tables = result_tables(demo.run_dir)
    assert len(tables) == 2, tables.keys()
    for name, counts in tables.items():
        # every window of the file, the last ones included (closed by the end of input)
        assert counts == sample.counts, f"{name}: {len(counts)} rows, expected {len(sample.counts)}"


@pytest.mark.slow
def test_a_real_format_log_is_counted_exactly_once_in_every_sink(tmp_path: Path, demos: list[DemoProcess]) -> None:
    log = tmp_path / "access.log"
    sample = write_sample_log(log, LINES, seed=12)
    assert sum(sample.malformed.values()) == LINES // 200
    demo = DemoProcess(tmp_path / "run", "--input", str(log), "--postgres", "--trigger-ms", "2000", "--timeout", "420")
    demos.append(demo)
    assert demo.wait(600) == 0, demo.tail()
    assert_exact(demo, sample, LINES)


@pytest.mark.slow
def test_a_followed_log_is_counted_exactly_once_across_a_rotation(tmp_path: Path, demos: list[DemoProcess]) -> None:
    whole = tmp_path / "whole.log"
    sample = write_sample_log(whole, LINES, seed=13)
    data = whole.read_bytes().splitlines(keepends=True)
    first, second = data[: LINES // 2], data[LINES // 2 :]
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    log = log_dir / "access.log"
    log.write_bytes(b"".join(first))
    demo = DemoProcess(
        tmp_path / "run", "--input", str(log), "--follow", "--idle-timeout", "20", "--postgres",
        "--trigger-ms", "2000", "--timeout", "420",
    )  # fmt: skip
    demos.append(demo)
    # The tailer starts before the Spark job serves (and before the first progress line): rotate once it
    # committed its first lines, well within the idle timeout.
    connect_log = tmp_path / "run" / "logs" / "connect.log"
    deadline = time.monotonic() + 300
    while "task.transaction_committed" not in (connect_log.read_text() if connect_log.exists() else ""):
        assert demo.process.poll() is None and time.monotonic() < deadline, demo.tail()
        time.sleep(0.2)
    # logrotate's "create": the file is renamed away and a new one takes its name
    log.rename(log_dir / "access.log.1")
    log.write_bytes(b"".join(second[: len(second) // 2]))
    time.sleep(2)
    with log.open("ab") as out:  # the application goes on writing to the new file
        out.write(b"".join(second[len(second) // 2 :]))
    assert demo.wait(600) == 0, demo.tail()
    assert "input_ended=true" in demo.output
    assert_exact(demo, sample, LINES)
