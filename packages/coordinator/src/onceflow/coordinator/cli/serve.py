"""``onceflow coordinator``: run the transaction coordinator in the foreground.

Also reachable as ``python -m onceflow.coordinator``. Configuration comes from ``--config FILE``
(see services/coordinator/coordinator.toml) and ``ONCEFLOW_COORDINATOR__*`` environment variables.
Exit codes: 0 after SIGTERM/SIGINT, 2 for a bad configuration or an unreachable log, 3 when a newer
coordinator instance fenced this one, 4 when the transaction log failed.
"""

from __future__ import annotations

import argparse
from typing import Any

from onceflow.core.service import add_service_arguments, run_service


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_service_arguments(parser, "services/coordinator/coordinator.toml")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds the ``coordinator`` subcommand."""
    parser = subparsers.add_parser(
        "coordinator",
        help="run the 2PC transaction coordinator",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the settings and serve; returns the process exit code."""
    from onceflow.coordinator.service.server import CoordinatorServer
    from onceflow.coordinator.settings import CoordinatorSettings
    from onceflow.core.faults import installed_faults
    from onceflow.core.settings import load_settings

    return run_service(
        "coordinator",
        lambda: load_settings(CoordinatorSettings, args.config),
        lambda settings: CoordinatorServer(settings, faults=installed_faults("coordinator")),
        ready_file=args.ready_file,
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m onceflow.coordinator`` entry point."""
    parser = argparse.ArgumentParser(prog="python -m onceflow.coordinator", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
