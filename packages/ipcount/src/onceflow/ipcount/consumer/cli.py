"""``onceflow ipcount counts|top|watch``: query the IP-count service (``onceflow.v1.IpCounts``) of a
running consumer, with the target, TLS and token options of ``onceflow results``.

    onceflow ipcount counts --ip 10.1.2.3 --from 1767225600000 --to 1767225660000
    onceflow ipcount top --limit 10            # the latest closed window
    onceflow ipcount top --window 1767225600000
    onceflow ipcount watch                     # every batch the consumer commits, until Ctrl-C

Output: one ``window_start,window_end,ip,count`` line per row (CSV). Exit codes: 0 done, 1 the server
could not be reached or failed, 2 bad arguments.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from onceflow.consumer.cli.results import add_target_arguments, client_tls, follow, offsets_text, rpc_failure
from onceflow.contract.clients import RpcFailed
from onceflow.ipcount.api import IpCount, IpCountsClient, IpCountsUpdate


def add_query_commands(commands: argparse._SubParsersAction[Any]) -> None:
    """Adds ``counts``, ``top`` and ``watch`` to the ``onceflow ipcount`` commands."""
    common = argparse.ArgumentParser(add_help=False)
    add_target_arguments(common)

    counts = commands.add_parser("counts", parents=[common], help="counts of one ip per window")
    counts.add_argument("--ip", required=True)
    counts.add_argument("--from", dest="from_ms", type=int, default=0, metavar="MS", help="window start >= MS")
    counts.add_argument("--to", dest="to_ms", type=int, default=0, metavar="MS", help="window start < MS (0: no end)")
    counts.set_defaults(func=_counts)

    top = commands.add_parser("top", parents=[common], help="top ips of one window")
    top.add_argument("--window", type=int, default=0, metavar="MS", help="window start (0: the latest closed window)")
    top.add_argument("--limit", type=int, default=10, metavar="N")
    top.set_defaults(func=_top)

    watch = commands.add_parser("watch", parents=[common], help="print counts as the consumer commits them")
    watch.add_argument("--from", dest="from_ms", type=int, default=0, metavar="MS", help="only windows starting >= MS")
    watch.add_argument("--max-batches", type=int, default=0, metavar="N", help="stop after N batches (0: never)")
    watch.set_defaults(func=_watch)


def _client(args: argparse.Namespace) -> IpCountsClient:
    return IpCountsClient(args.results, client_tls(args), timeout_s=args.timeout)


def _print_rows(rows: Iterable[IpCount]) -> None:
    for row in rows:
        print(f"{row.window_start_ms},{row.window_end_ms},{row.ip},{row.count}")


def _counts(args: argparse.Namespace) -> int:
    with _client(args) as client:
        try:
            counts = client.get_ip_counts(args.ip, args.from_ms, args.to_ms)
        except RpcFailed as exc:
            return rpc_failure(exc, args.results)
    print("window_start,window_end,ip,count")
    _print_rows(counts)
    return 0


def _top(args: argparse.Namespace) -> int:
    with _client(args) as client:
        try:
            response = client.get_top_ips(args.window, args.limit)
        except RpcFailed as exc:
            return rpc_failure(exc, args.results)
    print(f"# window_start={response.window_start_ms}")
    print("window_start,window_end,ip,count")
    _print_rows(response.counts)
    return 0


def _watch(args: argparse.Namespace) -> int:
    def show(update: IpCountsUpdate) -> bool:
        _print_rows(update.counts)
        print(f"# {'offsets' if update.counts else 'watching; offsets'} {offsets_text(update.offsets)}", flush=True)
        return bool(update.counts)

    with _client(args) as client:
        try:
            stream = client.watch_results(args.from_ms)
            print("window_start,window_end,ip,count", flush=True)
            follow(stream, show, args.max_batches)
        except RpcFailed as exc:
            return rpc_failure(exc, args.results)
    return 0
