"""The foreground ``onceflow <service>`` command of a gRPC service: arguments, settings, logging, exit codes.

Shared by the services whose command is "load settings, configure logging, serve until signalled"
(the coordinator and the consumer), so that their options, messages and exit codes stay the same.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from onceflow.core.errors import OnceflowError
from onceflow.core.logging import configure_logging
from onceflow.core.settings import LoggingSettings, Settings, load_settings

S = TypeVar("S", bound=Settings)

#: Exit code of a bad configuration or an unreachable dependency at start-up.
EXIT_CONFIG = 2


def add_service_arguments(parser: argparse.ArgumentParser, default_config: str) -> None:
    """``--config FILE`` and ``--ready-file FILE``; ``default_config`` names the shipped config file."""
    parser.add_argument("--config", metavar="FILE", help=f"TOML config file (see {default_config})")
    parser.add_argument(
        "--ready-file",
        metavar="FILE",
        type=Path,
        help="write {pid, port, metrics_port} as JSON here once serving (for supervisors and tests)",
    )


def run_service(
    command: str,
    settings_class: type[S],
    config: str | None,
    serve: Callable[[S], int],
    fatal: tuple[type[BaseException], ...] = (OnceflowError,),
) -> int:
    """Run a service in the foreground; returns the process exit code.

    Steps:
        1. Load the settings (file + environment); a bad one prints the error and returns 2.
        2. Configure logging to stderr as the settings say.
        3. Serve; ``serve`` returns the service's own exit code. An error of the ``fatal`` kinds
           (an unreachable dependency) prints ``onceflow <command>: <error>`` and returns 2.
    """
    # Step 1
    try:
        settings = load_settings(settings_class, config)
    except OnceflowError as exc:
        print(f"onceflow {command}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    # Step 2
    log: LoggingSettings = getattr(settings, "log", LoggingSettings())
    configure_logging(level=log.level, fmt=log.format, stream=sys.stderr)
    # Step 3
    try:
        return serve(settings)
    except fatal as exc:
        print(f"onceflow {command}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
