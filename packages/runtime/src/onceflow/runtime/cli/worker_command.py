"""``onceflow connect-worker``: run a connect worker until SIGTERM/SIGINT.

Exit codes: 0 after SIGTERM/SIGINT, 2 for a bad configuration or an unreachable Kafka cluster.
"""

from __future__ import annotations

import argparse
from typing import Any

from onceflow.core.service import add_service_arguments, run_service


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "connect-worker",
        help="run a connect worker (standalone or distributed)",
        description="Run a Kafka-Connect-like worker. Settings come from --config (TOML) and ONCEFLOW_CONNECT__* "
        "environment variables; connector files (JSON or properties) are created at start in standalone mode.",
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_service_arguments(parser, "services/connect-worker/worker.toml")
    parser.add_argument("connectors", nargs="*", help="connector config files (standalone mode)")


def run(args: argparse.Namespace) -> int:
    """Load the settings and serve; returns the process exit code."""
    from onceflow.core.settings import load_settings
    from onceflow.runtime.config.worker_settings import WorkerSettings
    from onceflow.runtime.service import ConnectWorkerService

    def load() -> WorkerSettings:
        settings = load_settings(WorkerSettings, args.config)
        if args.connectors:
            settings = settings.model_copy(update={"connectors": [*settings.connectors, *args.connectors]})
        return settings

    return run_service("connect-worker", load, ConnectWorkerService, ready_file=args.ready_file)
