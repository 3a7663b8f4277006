"""``onceflow participant``: run a two-phase-commit sink participant server.

Also reachable as ``python -m onceflow.sinks``. Configuration comes from ``--config FILE`` (see
services/participant/participant.toml) and ``ONCEFLOW_PARTICIPANT__*`` environment variables. Prepared
transactions left by a previous run are resolved with the coordinator before any new work is taken.
Exit codes: 0 after SIGTERM/SIGINT (also while recovery still waits for the coordinator), 2 for a bad
configuration or a sink that cannot be opened.
"""

from __future__ import annotations

import argparse
from typing import Any

from onceflow.core.service import add_service_arguments, run_service


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_service_arguments(parser, "services/participant/participant.toml")


def register(subparsers: Any) -> None:
    """Entry point of the ``onceflow.cli`` group: adds the ``participant`` subcommand."""
    parser = subparsers.add_parser(
        "participant",
        help="run a 2PC sink participant server (Kafka topic, SQLite, PostgreSQL sinks)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Load the settings and serve; returns the process exit code."""
    from onceflow.core.faults import installed_faults
    from onceflow.core.settings import load_settings
    from onceflow.sinks.server import ParticipantServer, ParticipantSettings

    return run_service(
        "participant",
        lambda: load_settings(ParticipantSettings, args.config),
        lambda settings: ParticipantServer(settings, faults=installed_faults("participant")),
        ready_file=args.ready_file,
    )
