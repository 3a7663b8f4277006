"""``onceflow logproducer truth``: the exact expected counts per (window, ip) of the first N events;
``onceflow logproducer sample``: a messy access log with a known truth (:mod:`onceflow.logproducer.sample`).

onceflow logproducer truth --seed 7 --count 200000 [--window-ms 5000] [--format csv|jsonl]
    [-c ips=1000 -c max.disorder.ms=3000 ...]   # the generator's settings, as in its connector config
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
from onceflow.core.settings import parse_pairs
from onceflow.ipcount.traffic import expected_counts, model_from_config
from onceflow.logproducer.generator.connector import generator_config_def
from onceflow.logproducer.sample import write_sample_log


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("logproducer", help="access-log producer tools")
    commands = parser.add_subparsers(title="logproducer commands", dest="logproducer_command", required=True)
    truth = commands.add_parser(
        "truth", help="exact expected counts per (window, ip) of the generator's first N events"
    )
    truth.add_argument("--seed", type=int, required=True)
    truth.add_argument("--count", type=int, required=True, help="the first N events (0..N-1)")
    truth.add_argument("--window-ms", type=int, default=defaults.WINDOW_MS)
    truth.add_argument("--format", choices=["csv", "jsonl"], default="csv")
    truth.add_argument(
        "-c", "--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
        help="generator setting, as in the connector config (ips, paths, zipf.exponent, event.time.*, max.disorder.ms)",
    )  # fmt: skip
    truth.set_defaults(func=run_truth)
    sample = commands.add_parser("sample", help="write a messy nginx/Apache access log with a known truth")
    sample.add_argument("--lines", type=int, required=True)
    sample.add_argument("--seed", type=int, required=True)
    sample.add_argument("--out", required=True, help="the log file to write (replaced)")
    sample.add_argument("--malformed-ratio", type=float, default=0.005, help="share of malformed lines")
    sample.add_argument("--window-ms", type=int, default=defaults.WINDOW_MS)
    sample.add_argument("--truth", metavar="CSV", help="also write the expected counts per (window, ip) here")
    sample.set_defaults(func=run_sample)


def run_truth(args: argparse.Namespace) -> int:
    if args.count < 0:
        raise InvalidConfig("--count", "must be >= 0")
    if args.window_ms < 1:
        raise InvalidConfig("--window-ms", "must be >= 1")
    raw = {**parse_pairs(args.settings, "-c"), "seed": str(args.seed)}
    model = model_from_config(generator_config_def().parse(raw))
    out = sys.stdout
    if args.format == "csv":
        out.write("window_start,window_end,ip,count\n")
    for row in expected_counts(model, args.count, args.window_ms):
        if args.format == "csv":
            out.write(f"{row.window_start},{row.window_end},{row.ip},{row.count}\n")
        else:
            doc = {"window_start": row.window_start, "window_end": row.window_end, "ip": row.ip, "count": row.count}
            out.write(json.dumps(doc) + "\n")
    return 0


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
