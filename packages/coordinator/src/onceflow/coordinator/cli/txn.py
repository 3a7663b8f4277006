"""``onceflow txn``: list, show and resolve the coordinator's transactions (like ``kafka-transactions.sh``).

Examples::

    onceflow txn list --job ipcount --state COMMITTING
    onceflow txn show ipcount:42
    onceflow txn resolve ipcount:42 --abort --reason "sink postgres lost for good" --yes

Every command talks to a running coordinator over gRPC (``--coordinator HOST:PORT``, TLS with
``--tls-ca`` and, for mTLS, ``--tls-cert``/``--tls-key``). Exit codes: 0 done, 1 the coordinator
refused or could not be reached, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import grpc

from onceflow.coordinator.model import TransactionId, TransactionState
from onceflow.core.grpc import open_channel
from onceflow.core.settings import TlsSettings
from onceflow.proto.v1 import common_pb2, coordinator_pb2, coordinator_pb2_grpc

DEFAULT_TARGET_ENV = "ONCEFLOW_COORDINATOR_TARGET"
DEFAULT_TARGET = "127.0.0.1:7100"
_STATES = [state.value for state in TransactionState]


def _common_arguments() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--coordinator",
        metavar="HOST:PORT",
        default=os.environ.get(DEFAULT_TARGET_ENV, DEFAULT_TARGET),
        help=f"coordinator address (default: ${DEFAULT_TARGET_ENV} or {DEFAULT_TARGET})",
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


def _stub(args: argparse.Namespace) -> tuple[grpc.Channel, coordinator_pb2_grpc.TransactionCoordinatorStub]:
    tls = TlsSettings(ca=args.tls_ca, cert=args.tls_cert, key=args.tls_key, token_file=args.token_file)
    channel = open_channel(args.coordinator, tls)
    return channel, coordinator_pb2_grpc.TransactionCoordinatorStub(channel)  # type: ignore[no-untyped-call]


def _calling(
    command: Callable[[argparse.Namespace, coordinator_pb2_grpc.TransactionCoordinatorStub], int],
) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        channel, stub = _stub(args)
        try:
            return command(args, stub)
        except grpc.RpcError as exc:
            code = exc.code().name if isinstance(exc, grpc.Call) else "ERROR"
            details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
            print(f"onceflow txn: {code}: {details}", file=sys.stderr)
            return 1
        finally:
            channel.close()

    return run


def _state(value: int) -> str:
    return common_pb2.TransactionState.Name(value).removeprefix("TRANSACTION_STATE_")


def _time(stamp: Any) -> str:
    if not stamp.seconds and not stamp.nanos:
        return "-"
    moment = datetime.fromtimestamp(stamp.seconds + stamp.nanos / 1e9, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _txn_name(txn: coordinator_pb2.Transaction) -> str:
    return f"{txn.id.job}:{txn.id.batch}"


@_calling
def _list(args: argparse.Namespace, stub: coordinator_pb2_grpc.TransactionCoordinatorStub) -> int:
    states = [
        common_pb2.TransactionState.Name(common_pb2.TransactionState.Value(f"TRANSACTION_STATE_{name}"))
        for name in args.state
    ]
    request = coordinator_pb2.ListTransactionsRequest(job=args.job, states=states, limit=args.limit)
    response = stub.ListTransactions(request, timeout=args.timeout)
    rows = [("TXN", "STATE", "EPOCH", "FILES", "ROWS", "UPDATED", "REASON")]
    for txn in response.transactions:
        rows.append(
            (
                _txn_name(txn),
                _state(txn.state),
                str(txn.writer_epoch),
                str(len(txn.files)),
                str(sum(f.count for f in txn.files)),
                _time(txn.updated_at),
                txn.reason,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1])
    return 0


def _print_transaction(txn: coordinator_pb2.Transaction) -> None:
    print(f"txn           {_txn_name(txn)}")
    print(f"state         {_state(txn.state)}")
    print(f"writer epoch  {txn.writer_epoch}")
    print(f"started       {_time(txn.started_at)}")
    print(f"updated       {_time(txn.updated_at)}")
    print(f"reason        {txn.reason or '-'}")
    print(f"files         {len(txn.files)} ({sum(f.count for f in txn.files)} rows)")
    for file in txn.files:
        print(f"  {file.uri}  count={file.count}  sha256={file.sha256}")
    print("participants")
    for vote in txn.participants:
        prepared = "yes" if vote.prepared else "no"
        acked = "yes" if vote.acknowledged else "no"
        error = f"  error={vote.error}" if vote.error else ""
        print(f"  {vote.sink}  prepared={prepared}  acked={acked}{error}")


@_calling
def _show(args: argparse.Namespace, stub: coordinator_pb2_grpc.TransactionCoordinatorStub) -> int:
    request = coordinator_pb2.GetTransactionRequest(job=args.txn.job, batch=args.txn.batch)
    _print_transaction(stub.GetTransaction(request, timeout=args.timeout).transaction)
    return 0


@_calling
def _resolve(args: argparse.Namespace, stub: coordinator_pb2_grpc.TransactionCoordinatorStub) -> int:
    txn_id: TransactionId = args.txn
    verdict = "COMMIT" if args.commit else "ABORT"
    if not args.yes:
        current = stub.GetTransaction(
            coordinator_pb2.GetTransactionRequest(job=txn_id.job, batch=txn_id.batch), timeout=args.timeout
        ).transaction
        _print_transaction(current)
        answer = input(f"Force {txn_id} ({_state(current.state)}) to {verdict}? This cannot be undone. [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("not resolved")
            return 1
    request = coordinator_pb2.ResolveTransactionRequest(
        job=txn_id.job,
        batch=txn_id.batch,
        resolution=coordinator_pb2.RESOLUTION_COMMIT if args.commit else coordinator_pb2.RESOLUTION_ABORT,
        reason=args.reason,
    )
    response = stub.ResolveTransaction(request, timeout=args.timeout)
    print(f"{txn_id}: {_state(response.state)}")
    return 0
