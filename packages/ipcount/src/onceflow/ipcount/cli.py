"""``onceflow ipcount truth``: the exact expected counts per (window, ip) of the first N events of the
example's generator (``access-log-generator``, :mod:`onceflow.ipcount.generator`); with the consumer
installed, ``onceflow ipcount counts|top|watch`` query a consumer's IP-count service
(:mod:`onceflow.ipcount.consumer.cli`).

onceflow ipcount truth --seed 7 --count 200000 [--window-ms 5000] [--format csv|jsonl]
    [-c ips=1000 -c max.disorder.ms=3000 ...]   # the generator's settings, as in its connector config
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from onceflow.core import defaults
from onceflow.core.errors import InvalidConfig
from onceflow.core.settings import parse_pairs
from onceflow.ipcount.generator import generator_config_def
from onceflow.ipcount.traffic import expected_counts, model_from_config


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("ipcount", help="the IP-count example's tools")
    commands = parser.add_subparsers(title="ipcount commands", dest="ipcount_command", required=True)
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
    try:
        from onceflow.ipcount.consumer.cli import add_query_commands
    except ImportError:  # without the consumer extra: no consumer to query
        return
    add_query_commands(commands)


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
