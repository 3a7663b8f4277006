"""``onceflow acls plan|apply``: the least-privilege ACLs of every onceflow service, on any Kafka.

``plan`` prints, per service, the ACLs its principal needs (see ``onceflow.acls.plan``);
``apply`` creates them through the Admin API (CreateAcls, as ``kafka-acls --add`` does) on Apache Kafka
or the embedded broker, then reads them back (DescribeAcls) and says per service how many are in
place. Both take ``--principal-map coordinator=User:coordinator,connect=User:connect,...``: only the
services named get ACLs. Names come from each service's settings: its defaults, or
``--config SERVICE=FILE`` (the file the service runs with).

Exit codes: 0 when every ACL is in place; 1 when the broker refused or lost one (named on stderr); 2
for a bad argument.

Example::

    onceflow acls apply --bootstrap-servers kafka:9092 -X security.protocol=SASL_SSL \\
        -X sasl.mechanism=SCRAM-SHA-512 --command-config admin.properties \\
        --principal-map coordinator=User:coordinator,participant=User:participant,consumer=User:results
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onceflow.acls.plan import Grant, plan
from onceflow.acls.topology import SERVICES, Topology
from onceflow.core.errors import InvalidConfig
from onceflow.core.logging import get_logger
from onceflow.core.service import add_command
from onceflow.core.settings import parse_pairs
from onceflow.core.settings.base import read_properties_file

log = get_logger("onceflow.acls")


def principal_map(text: str) -> dict[str, str]:
    """``service=User:name,...`` -> ``{service: "User:name"}``; a bare name becomes ``User:name``."""
    principals: dict[str, str] = {}
    for service, principal in parse_pairs((p for p in text.split(",") if p.strip()), "--principal-map").items():
        if service not in SERVICES:
            raise InvalidConfig("--principal-map", f"unknown service {service!r}; known: {', '.join(SERVICES)}")
        if not principal or principal.endswith(":"):
            raise InvalidConfig("--principal-map", f"{service} has no principal")
        principals[service] = principal if ":" in principal else f"User:{principal}"
    if not principals:
        raise InvalidConfig("--principal-map", "names no service")
    return principals


def bindings(topology: Topology, principals: Mapping[str, str]) -> list[tuple[str, Grant]]:
    """(principal, grant) of every service in ``principals``."""
    return [(principals[g.service], g) for g in plan(topology) if g.service in principals]


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--principal-map", required=True, metavar="SERVICE=PRINCIPAL,...",
                        help=f"the principal of each service ({', '.join(SERVICES)})")  # fmt: skip
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="SERVICE=FILE",
        help="a service's config file, otherwise its defaults (repeatable; several "
        "for the shards of a participant and for several Spark jobs)",
    )
    parser.add_argument("--service-env", action="store_true",
                        help="also read the services' ONCEFLOW_<SERVICE>__... settings from this environment "
                             "(a deploy job that sets the services' own variables)")  # fmt: skip


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds ``onceflow acls plan|apply``."""
    parser = add_command(
        subparsers, "acls", help="print or apply the least-privilege ACLs of every service", description=__doc__
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    plan_parser = commands.add_parser("plan", help="print the ACLs each service needs")
    _add_common(plan_parser)
    plan_parser.set_defaults(func=run_plan)
    apply_parser = commands.add_parser("apply", help="create the ACLs through the Admin API")
    _add_common(apply_parser)
    apply_parser.add_argument("--bootstrap-servers", required=True, metavar="HOST:PORT")
    apply_parser.add_argument("-X", dest="kafka_properties", action="append", default=[], metavar="KEY=VALUE",
                              help="librdkafka property of the admin login (repeatable)")  # fmt: skip
    apply_parser.add_argument("--command-config", metavar="FILE",
                              help="librdkafka properties of the admin login, name=value lines (as kafka-acls' "
                                   "option: keeps the password off the command line); -X wins")  # fmt: skip
    apply_parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS")
    apply_parser.set_defaults(func=run_apply)


def _topology(args: argparse.Namespace) -> Topology:
    """The topology of ``--config SERVICE=FILE`` options (repeated for a participant's shards and for
    several Spark jobs), with this environment's service settings when ``--service-env``."""
    paths: dict[str, list[Path]] = {}
    for item in args.config:
        for service, path in parse_pairs([item], "--config").items():
            paths.setdefault(service, []).append(Path(path))
    return Topology.load(paths, env=os.environ if args.service_env else None)


def _command_config(path: str) -> dict[str, str]:
    """The properties of ``--command-config`` (errors name the file, never a value)."""
    try:
        return read_properties_file(path)
    except ValueError as exc:
        raise InvalidConfig("--command-config", str(exc)) from None


def run_plan(args: argparse.Namespace) -> int:
    """Print every service's ACLs, one a line, grouped by service."""
    service = None
    for principal, grant in bindings(_topology(args), principal_map(args.principal_map)):
        if grant.service != service:
            service = grant.service
            print(f"# {service} ({principal})")
        print(grant.line(principal))
    return 0


def run_apply(args: argparse.Namespace) -> int:
    """Create every service's ACLs and check that the broker holds them (see module docs)."""
    from onceflow.acls.admin import AclAdmin

    wanted = bindings(_topology(args), principal_map(args.principal_map))
    config = {
        "bootstrap.servers": args.bootstrap_servers,
        **(_command_config(args.command_config) if args.command_config else {}),
        **parse_pairs(args.kafka_properties, "-X"),
    }
    admin = AclAdmin(config, timeout=args.timeout)
    failed = admin.create(wanted)
    missing = admin.missing(wanted)
    for service in dict.fromkeys(g.service for _, g in wanted):
        mine = [(p, g) for p, g in wanted if g.service == service]
        absent = [pg for pg in mine if pg in missing]
        log.info("acls.applied", service=service, principal=mine[0][0], acls=len(mine), missing=len(absent))
        print(f"{service}: {len(mine) - len(absent)}/{len(mine)} ACLs in place for {mine[0][0]}")
    for (principal, grant), reason in failed.items():
        print(f"onceflow acls: refused: {grant.line(principal)}: {reason}", file=sys.stderr)
    for principal, grant in missing:
        if (principal, grant) not in failed:
            print(f"onceflow acls: not in place: {grant.line(principal)}", file=sys.stderr)
    return 1 if failed or missing else 0
