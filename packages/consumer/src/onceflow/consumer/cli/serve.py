"""``onceflow consumer``: run the results consumer and its Results API in the foreground.

Also reachable as ``python -m onceflow.consumer``. Configuration comes from ``--config FILE`` (see
services/consumer/consumer.toml) and ``ONCEFLOW_CONSUMER__*`` environment variables. Exit codes: 0
after SIGTERM/SIGINT, 2 for a bad configuration or an unreachable store, 4 when the consumer loop
failed (restart it: it resumes from the offsets stored with the results).
"""

from __future__ import annotations

import argparse
from typing import Any

from onceflow.core.errors import OnceflowError
from onceflow.core.service import add_service_arguments, run_service


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_service_arguments(parser, "services/consumer/consumer.toml")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds the ``consumer`` subcommand."""
    parser = subparsers.add_parser(
        "consumer",
        help="run the read_committed results consumer and the Results API",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the settings and serve; returns the process exit code."""
    import psycopg

    from onceflow.consumer.service import ConsumerService
    from onceflow.consumer.settings import ConsumerSettings
    from onceflow.core.faults import installed_faults
    from onceflow.core.settings import load_settings

    return run_service(
        "consumer",
        lambda: load_settings(ConsumerSettings, args.config),
        lambda settings: ConsumerService(settings, faults=installed_faults("consumer")),
        ready_file=args.ready_file,
        fatal=(OnceflowError, psycopg.OperationalError),
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m onceflow.consumer`` entry point."""
    parser = argparse.ArgumentParser(prog="python -m onceflow.consumer", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))
