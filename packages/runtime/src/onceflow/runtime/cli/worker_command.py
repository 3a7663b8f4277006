"""``onceflow connect-worker``: run a connect worker until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
from typing import Any

from onceflow.core.logging import configure_logging
from onceflow.core.settings import load_settings
from onceflow.runtime.config.worker_settings import WorkerSettings
from onceflow.runtime.service import ConnectWorkerService


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
    parser.add_argument("--config", help="worker settings file (TOML)")
    parser.add_argument("connectors", nargs="*", help="connector config files (standalone mode)")


def run(args: argparse.Namespace) -> int:
    settings = load_settings(WorkerSettings, args.config)
    if args.connectors:
        settings = settings.model_copy(update={"connectors": [*settings.connectors, *args.connectors]})
    configure_logging(settings.log.level, settings.log.format)
    ConnectWorkerService(settings).run_until_signal()
    return 0
