"""``onceflow logproducer sample``: a messy access log with a known truth (:mod:`onceflow.logproducer.sample`).
(The generator's truth is the example's: ``onceflow ipcount truth``.)

onceflow logproducer sample --lines 100000 --seed 7 --out access.log [--malformed-ratio 0.005]
    [--window-ms 5000] [--truth counts.csv]     # prints a JSON summary: lines, events, malformed per kind
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from onceflow.core import defaults
from onceflow.core.errors import InvalidConfig
from onceflow.logproducer.sample import write_sample_log


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("logproducer", help="access-log producer tools")
    commands = parser.add_subparsers(title="logproducer commands", dest="logproducer_command", required=True)
    sample = commands.add_parser("sample", help="write a messy nginx/Apache access log with a known truth")
    sample.add_argument("--lines", type=int, required=True)
    sample.add_argument("--seed", type=int, required=True)
    sample.add_argument("--out", required=True, help="the log file to write (replaced)")
    sample.add_argument("--malformed-ratio", type=float, default=0.005, help="share of malformed lines")
    sample.add_argument("--window-ms", type=int, default=defaults.WINDOW_MS)
    sample.add_argument("--truth", metavar="CSV", help="also write the expected counts per (window, ip) here")
    sample.set_defaults(func=run_sample)


def run_sample(args: argparse.Namespace) -> int:
    if args.lines < 0:
        raise InvalidConfig("--lines", "must be >= 0")
    if not 0 <= args.malformed_ratio <= 1:
        raise InvalidConfig("--malformed-ratio", "must be between 0 and 1")
    if args.window_ms < 1:
        raise InvalidConfig("--window-ms", "must be >= 1")
    truth = write_sample_log(
        args.out, args.lines, seed=args.seed, malformed_ratio=args.malformed_ratio, window_ms=args.window_ms
    )
    if args.truth:
        with open(args.truth, "w") as out:
            out.write("window_start,window_end,ip,count\n")
            for (start, ip), count in sorted(truth.counts.items()):
                out.write(f"{start},{start + args.window_ms},{ip},{count}\n")
    summary = {
        "out": args.out,
        "lines": truth.lines,
        "events": truth.events,
        "malformed": dict(sorted(truth.malformed.items())),
        "windows": len({start for start, _ in truth.counts}),
        "max_event_time": truth.max_event_time,
    }
    sys.stdout.write(json.dumps(summary) + "\n")
    return 0
