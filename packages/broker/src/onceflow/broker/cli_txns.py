"""``onceflow broker txns``: list the broker's open transactions, or abort a stuck one.

    onceflow broker txns --bootstrap-server HOST:PORT
    onceflow broker txns --bootstrap-server HOST:PORT --abort TRANSACTIONAL_ID [--yes]

Listing prints one line per open transaction (Ongoing, PrepareCommit, PrepareAbort), oldest first,
with its age, timeout and partitions. ``--abort`` fences the id's producer and aborts its open
transaction the way a new producer instance does (see :mod:`onceflow.broker.admin.transactions`),
after a confirmation prompt that ``--yes`` skips. Exit codes: 0 done, 1 refused or nothing to abort,
2 broker error.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

from onceflow.core.service import add_command


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add the ``txns`` subcommand (under ``onceflow broker``)."""
    parser = add_command(subparsers, "txns", help="list open transactions, or abort a stuck one", description=__doc__)
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT", help="the broker to ask")
    parser.add_argument("--abort", metavar="TRANSACTIONAL_ID", help="abort this id's open transaction")
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    parser.set_defaults(func=run)


def _format_age(age_ms: int | None) -> str:
    if age_ms is None:
        return "-"
    seconds = age_ms / 1000
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def _print_open(admin: Any, out: TextIO) -> int:
    from onceflow.broker.admin.transactions import TransactionInfo

    infos: list[TransactionInfo] = admin.list_open()
    now_ms = int(time.time() * 1000)
    rows = [("TRANSACTIONAL_ID", "STATE", "PRODUCER_ID", "EPOCH", "AGE", "TIMEOUT", "PARTITIONS")]
    for info in infos:
        partitions = ",".join(f"{topic}-{partition}" for topic, partition in info.partitions) or "-"
        rows.append(
            (
                info.transactional_id,
                info.state,
                str(info.producer_id),
                str(info.producer_epoch),
                _format_age(info.age_ms(now_ms)),
                _format_age(info.timeout_ms),
                partitions,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + f"  {row[-1]}\n")
    out.write(f"{len(infos)} open transaction(s)\n")
    return 0


def _abort(admin: Any, transactional_id: str, assume_yes: bool, out: TextIO) -> int:
    (info,) = admin.describe([transactional_id])
    if not info.is_open:
        out.write(f"transactional id {transactional_id!r} has no open transaction (state {info.state})\n")
        return 1
    age = _format_age(info.age_ms(int(time.time() * 1000)))
    out.write(
        f"transactional id {transactional_id!r}: {info.state}, producer {info.producer_id} epoch "
        f"{info.producer_epoch}, open for {age}, {len(info.partitions)} partition(s)\n"
    )
    if info.state == "PrepareCommit":
        out.write("its commit is already decided: it will be completed as a COMMIT, not aborted\n")
    if not assume_yes:
        out.write("fence its producer and abort the transaction? [y/N] ")
        out.flush()
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            out.write("not aborted\n")
            return 1
    after = admin.abort(transactional_id)
    out.write(
        f"transactional id {transactional_id!r}: now {after.state}, producer {after.producer_id} epoch "
        f"{after.producer_epoch} (the old producer is fenced)\n"
    )
    return 0


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the command; returns the exit code."""
    from onceflow.broker.admin.transactions import TransactionAdminError, TransactionsAdmin

    stream = out or sys.stdout
    admin = TransactionsAdmin(args.bootstrap_server)
    try:
        if args.abort:
            return _abort(admin, args.abort, args.yes, stream)
        return _print_open(admin, stream)
    except TransactionAdminError as exc:
        print(f"onceflow broker txns: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"onceflow broker txns: cannot reach {args.bootstrap_server}: {exc}", file=sys.stderr)
        return 2
