"""``onceflow broker users``: manage the SASL users of a broker's data dir (like Kafka's
``kafka-configs --alter --add-config 'SCRAM-SHA-256=[password=...]' --entity-type users``).

    onceflow broker users add --mechanism SCRAM-SHA-256 --user U --password P --data-dir D
    onceflow broker users remove --user U --data-dir D
    onceflow broker users list --data-dir D

Works on a running broker too: it reads the users file on every authentication. Passwords are not
stored, only salted SCRAM credentials (see :mod:`onceflow.broker.auth.credentials`). Exit codes: 0
done, 1 no such user, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from onceflow.broker.auth.credentials import MECHANISMS, CredentialStore
from onceflow.core.service import add_command


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add the ``users`` subcommand (under ``onceflow broker``)."""
    parser = add_command(subparsers, "users", help="add, remove or list SASL users", description=__doc__)
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="create or replace a user's credential for one mechanism")
    add.add_argument("--mechanism", required=True, choices=MECHANISMS)
    add.add_argument("--user", required=True)
    add.add_argument("--password", required=True)
    add.add_argument("--data-dir", required=True, type=Path, metavar="DIR")
    add.set_defaults(func=_add)
    remove = actions.add_parser("remove", help="delete every credential of a user")
    remove.add_argument("--user", required=True)
    remove.add_argument("--data-dir", required=True, type=Path, metavar="DIR")
    remove.set_defaults(func=_remove)
    listing = actions.add_parser("list", help="list users and their mechanisms")
    listing.add_argument("--data-dir", required=True, type=Path, metavar="DIR")
    listing.set_defaults(func=_list)


def _add(args: argparse.Namespace) -> int:
    try:
        CredentialStore(args.data_dir).add(args.user, args.mechanism, args.password)
    except ValueError as exc:
        print(f"onceflow broker users: {exc}", file=sys.stderr)
        return 2
    print(f"user {args.user}: {args.mechanism} credential stored")
    return 0


def _remove(args: argparse.Namespace) -> int:
    if not CredentialStore(args.data_dir).remove(args.user):
        print(f"onceflow broker users: no user {args.user!r}", file=sys.stderr)
        return 1
    print(f"user {args.user} removed")
    return 0


def _list(args: argparse.Namespace) -> int:
    for user, mechanisms in CredentialStore(args.data_dir).users().items():
        print(f"{user}\t{','.join(mechanisms)}")
    return 0
