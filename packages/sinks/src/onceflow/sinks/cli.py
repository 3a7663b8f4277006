"""``onceflow participant``: run a two-phase-commit sink participant server."""

from __future__ import annotations

import argparse
from typing import Any

from onceflow.core.logging import configure_logging
from onceflow.core.settings import load_settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", required=True, help="TOML settings file (see services/participant/participant.toml)"
    )
    parser.add_argument("--ready-file", default=None, help="write {port, pid, metrics_port} as JSON here once serving")


def register(subparsers: Any) -> None:
    """Entry point of the ``onceflow.cli`` group: adds the ``participant`` subcommand."""
    parser = subparsers.add_parser(
        "participant",
        help="run a 2PC sink participant server (Kafka topic, SQLite, PostgreSQL sinks)",
        description="Serve the Participant gRPC API for the sinks in --config. Prepared transactions left by a "
        "previous run are resolved with the coordinator before any new work is taken.",
    )
    add_arguments(parser)
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from onceflow.sinks.server import ParticipantSettings, run

    settings = load_settings(ParticipantSettings, args.config)
    configure_logging(settings.log.level, settings.log.format)
    return run(settings, ready_file=args.ready_file)
