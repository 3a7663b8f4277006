"""Micro-benchmark of access-log line parsing: the tailer's LineParser against the regex it replaced.

Assumptions:
- the input is the messy sample log of ``onceflow.logproducer.sample`` (nginx combined/main and
  Apache combined/common, ~40% of user agents with escapes, 0.5% malformed lines), written once to
  a temporary file and held in memory as a list of lines, so the timing covers parsing only (no
  file reads, no encoding, no Kafka);
- "old" is the single regex of ``formats/combined.py`` before issue 12 (copied here, with its
  ``strptime`` cache and uncached ``ipaddress`` check), which dead-letters every line whose quoted
  fields hold ``\\"``, so it does less work per line on this input than the new parser;
- "audit" is the IP-count audit's independent recount scanner (``onceflow.ipcount.audit.logfile``);
- single thread, CPython; prints the median lines/s over ``--runs`` runs and how many lines each
  one accepted, on the whole sample and on its "clean" lines only (those the old regex accepts:
  no escapes, no odd requests), where both do the same work per line;
- "hostile lines": single lines just under the tailer's 1 MiB ``max.line.bytes`` that a pattern
  could backtrack over (hundreds of thousands of fields, then an unterminated or misplaced quote);
  prints the median seconds per line of each parser (the tailer's must stay linear in the line).

    .venv/bin/python bench/parse_lines.py --lines 200000 --runs 5
"""

from __future__ import annotations

import argparse
import ipaddress
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from onceflow.ipcount.audit.logfile import LineScanner, Rejected
from onceflow.logproducer.formats import LineParser, MalformedLine
from onceflow.logproducer.sample import write_sample_log

_OLD_LINE = re.compile(
    r'^(?P<ip>\S+) \S+ \S+ \[(?P<time>[^\]]+)\] "(?P<request>[^"]*)" (?P<status>\d{3}) (?P<bytes>\d+|-)'
    r'(?: "(?P<referer>[^"]*)" "(?P<agent>[^"]*)")?\s*$'
)


@lru_cache(maxsize=4096)
def _old_epoch_ms(time_local: str) -> int:
    return int(datetime.strptime(time_local, "%d/%b/%Y:%H:%M:%S %z").timestamp() * 1000)


def old_parse(raw: bytes) -> bool:
    """The pre-issue-12 combined parser; True for an event."""
    try:
        line = raw.decode("utf-8").rstrip("\r")
    except UnicodeDecodeError:
        return False
    match = _OLD_LINE.match(line)
    if match is None:
        return False
    request = match["request"].split(" ")
    if len(request) < 2 or not request[0].isalpha():
        return False
    try:
        _old_epoch_ms(match["time"])
        ipaddress.ip_address(match["ip"])
    except ValueError:
        return False
    return True


def new_parser() -> Callable[[bytes], bool]:
    parser = LineParser("auto")

    def parse(raw: bytes) -> bool:
        try:
            parser.parse(raw)
        except MalformedLine:
            return False
        return True

    return parse


def audit_scanner() -> Callable[[bytes], bool]:
    scanner = LineScanner("auto")
    return lambda raw: not isinstance(scanner.scan(raw), Rejected)


def run_once(parse: Callable[[bytes], bool], lines: list[bytes]) -> tuple[float, int]:
    start = time.perf_counter()
    accepted = sum(1 for line in lines if parse(line))
    return len(lines) / (time.perf_counter() - start), accepted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "access.log"
        truth = write_sample_log(path, args.lines, seed=args.seed)
        lines = path.read_bytes().split(b"\n")[:-1]
    print(f"{len(lines)} lines, {truth.events} events, {sum(truth.malformed.values())} malformed")
    clean = [line for line in lines if old_parse(line)]
    contenders: dict[str, Callable[[], Callable[[bytes], bool]]] = {
        "old regex": lambda: old_parse,
        "new LineParser": new_parser,
        "audit LineScanner": audit_scanner,
    }
    for label, sample in (("whole sample", lines), (f"clean lines only ({len(clean)})", clean)):
        print(label)
        for name, make in contenders.items():
            rates, accepted = [], 0
            for _ in range(args.runs):
                rate, accepted = run_once(make(), sample)
                rates.append(rate)
            runs = "/".join(f"{r / 1000:.0f}k" for r in rates)
            print(f"  {name:18} {statistics.median(rates):>10,.0f} lines/s (runs {runs}); events {accepted}")
    time_hostile(args.runs)


def hostile_lines() -> dict[str, bytes]:
    """Lines of about 1 MiB that fail at their very end, after many fields."""
    base = '10.0.0.1 - - [22/Nov/2026:14:30:01 +0000] "GET / HTTP/1.1" 200 1 "-" "ua"'
    return {
        "extension fields, then an open quote": (base + " 0.1" * 250_000 + ' "x').encode(),
        'extension fields, then x"y': (base + " 0.1" * 250_000 + ' "x"y').encode(),
        "quoted fields, then an open quote": (base + ' "a"' * 250_000 + ' "').encode(),
        "one long field, then an open quote": (base + " " + "a" * 1_000_000 + ' "').encode(),
    }


def time_hostile(runs: int) -> None:
    print("hostile lines (median seconds per line)")
    for name, line in hostile_lines().items():
        cells = []
        for label, make in (("LineParser", new_parser), ("LineScanner", audit_scanner)):
            seconds = []
            for _ in range(runs):
                parse = make()
                start = time.perf_counter()
                parse(line)
                seconds.append(time.perf_counter() - start)
            cells.append(f"{label} {statistics.median(seconds):.3f} s")
        print(f"  {name:38} {len(line) / 2**20:.2f} MiB: {', '.join(cells)}")


if __name__ == "__main__":
    main()
