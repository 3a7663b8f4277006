"""``onceflow txn``: list, show and resolve the coordinator's transactions (like ``kafka-transactions.sh``),
and create or rebuild its decision log.

Examples::

    onceflow txn list --job ipcount --state COMMITTING
    onceflow txn show ipcount:42
    onceflow txn resolve ipcount:42 --abort --reason "sink postgres lost for good" --yes
    onceflow txn init-log --config coordinator.toml
    onceflow txn rebuild --config coordinator.toml --participant 10.0.0.5:7101 --dry-run

``list``, ``show`` and ``resolve`` talk to a running coordinator over gRPC (``--coordinator
HOST:PORT[,HOST:PORT...]``: an active coordinator and its standbys, tried in turn; TLS with
``--tls-ca`` and, for mTLS, ``--tls-cert``/``--tls-key``). ``init-log`` and ``rebuild`` talk to
Kafka and the participants (:mod:`~onceflow.coordinator.cli.log_admin`). Exit codes: 0 done, 1 the
coordinator refused or could not be reached, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from onceflow.contract import Resolution, TransactionId, TransactionReport, TransactionState
from onceflow.contract.clients import CoordinatorClient, RpcFailed
from onceflow.coordinator.cli import log_admin
from onceflow.core.settings import TlsSettings

DEFAULT_TARGET_ENV = "ONCEFLOW_COORDINATOR_TARGET"
DEFAULT_TARGET = "127.0.0.1:7100"
_STATES = [state.value for state in TransactionState]


def _common_arguments() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--coordinator",
        metavar="HOST:PORT",
        default=os.environ.get(DEFAULT_TARGET_ENV, DEFAULT_TARGET),
        help=f"coordinator addresses, comma-separated (default: ${DEFAULT_TARGET_ENV} or {DEFAULT_TARGET})",
    )
    common.add_argument("--tls-ca", metavar="PEM", default="", help="CA of the coordinator's certificate (enables TLS)")
    common.add_argument("--tls-cert", metavar="PEM", default="", help="client certificate (mTLS)")
    common.add_argument("--tls-key", metavar="PEM", default="", help="client key (mTLS)")
    common.add_argument("--token-file", metavar="FILE", default="",
                        help="bearer token for the mutating RPCs (resolve), when the server requires one")  # fmt: skip
    common.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="deadline of each call")
    return common


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds ``txn list|show|resolve``."""
    common = _common_arguments()
    parser = subparsers.add_parser(
        "txn",
        help="inspect and resolve 2PC transactions of the coordinator",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(title="txn commands", metavar="COMMAND", required=True)

    listing = commands.add_parser("list", parents=[common], help="list transactions")
    listing.add_argument("--job", default="", help="only this job")
    listing.add_argument("--state", action="append", choices=_STATES, default=[], help="only these states (repeat)")
    listing.add_argument("--limit", type=int, default=0, help="at most this many (0: the server's page size)")
    listing.set_defaults(func=_list)

    show = commands.add_parser("show", parents=[common], help="show one transaction")
    show.add_argument("txn", type=TransactionId.parse, metavar="JOB:BATCH")
    show.set_defaults(func=_show)

    resolve = commands.add_parser("resolve", parents=[common], help="force a stuck transaction to commit or abort")
    resolve.add_argument("txn", type=TransactionId.parse, metavar="JOB:BATCH")
    verdict = resolve.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--commit", action="store_true", help="commit (only if every participant voted yes)")
    verdict.add_argument("--abort", action="store_true", help="abort (only if no commit was decided)")
    resolve.add_argument("--reason", default="", help="why; kept in the transaction log")
    resolve.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    resolve.set_defaults(func=_resolve)

    log_admin.add_commands(commands)


def _client(args: argparse.Namespace) -> CoordinatorClient:
    tls = TlsSettings(ca=args.tls_ca, cert=args.tls_cert, key=args.tls_key, token_file=args.token_file)
    return CoordinatorClient(args.coordinator, tls, timeout_s=args.timeout)


def _calling(
    command: Callable[[argparse.Namespace, CoordinatorClient], int],
) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            client = _client(args)
        except ValueError as exc:
            print(f"onceflow txn: {exc}", file=sys.stderr)
            return 2
        with client:
            try:
                return command(args, client)
            except RpcFailed as exc:
                print(f"onceflow txn: {exc.code().name}: {exc.details()}", file=sys.stderr)
                return 1

    return run


def _time(seconds: float) -> str:
    if not seconds:
        return "-"
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@_calling
def _list(args: argparse.Namespace, client: CoordinatorClient) -> int:
    states = [TransactionState(name) for name in args.state]
    rows = [("TXN", "STATE", "EPOCH", "FILES", "ROWS", "UPDATED", "REASON")]
    for txn in client.list_transactions(args.job, states, args.limit):
        rows.append(
            (
                str(txn.id),
                txn.state.value,
                str(txn.writer_epoch),
                str(len(txn.files)),
                str(txn.rows),
                _time(txn.updated_at),
                txn.reason,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])
    return 0


def _print_transaction(txn: TransactionReport) -> None:
    print(f"txn           {txn.id}")
    print(f"state         {txn.state.value}")
    print(f"writer epoch  {txn.writer_epoch}")
    print(f"started       {_time(txn.started_at)}")
    print(f"updated       {_time(txn.updated_at)}")
    print(f"reason        {txn.reason or '-'}")
    print(f"files         {len(txn.files)} ({txn.rows} rows)")
    for file in txn.files:
        print(f"  {file.uri}  count={file.count}  sha256={file.sha256}")
    print("participants")
    for vote in txn.votes:
        prepared = "yes" if vote.prepared else "no"
        acked = "yes" if vote.acknowledged else "no"
        error = f"  error={vote.error}" if vote.error else ""
        print(f"  {vote.sink}  prepared={prepared}  acked={acked}{error}")


@_calling
def _show(args: argparse.Namespace, client: CoordinatorClient) -> int:
    _print_transaction(client.get_transaction(args.txn))
    return 0


@_calling
def _resolve(args: argparse.Namespace, client: CoordinatorClient) -> int:
    txn_id: TransactionId = args.txn
    resolution = Resolution.COMMIT if args.commit else Resolution.ABORT
    verdict = resolution.name
    if not args.yes:
        current = client.get_transaction(txn_id)
        _print_transaction(current)
        answer = input(f"Force {txn_id} ({current.state.value}) to {verdict}? This cannot be undone. [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("not resolved")
            return 1
    response = client.resolve_transaction(txn_id, resolution, args.reason)
    print(f"{txn_id}: {response.state.value}")
    return 0
