"""The foreground ``onceflow <service>`` command: arguments, settings, logging, the serve loop, exit codes.

Every service command (broker, coordinator, participant, consumer, connect-worker, the Spark
runner) goes through :func:`run_service`, so their options, messages and exit codes are the same:
0 after SIGTERM/SIGINT, 2 (:data:`EXIT_CONFIG`) with ``onceflow <command>: <error>`` on stderr for
a bad configuration or an unreachable dependency, and the service's own codes for the rest.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from onceflow.core.errors import OnceflowError
from onceflow.core.exposure import listeners_of, refuse_unauthenticated
from onceflow.core.grpc.auth import check_token_files
from onceflow.core.logging import configure_logging
from onceflow.core.service.base import EXIT_CONFIG, Service, ServiceStartFailed
from onceflow.core.service.loop import serve_until_signalled
from onceflow.core.settings import LoggingSettings, Settings

S = TypeVar("S", bound=Settings)


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
    load: Callable[[], S],
    build: Callable[[S], Service],
    *,
    ready_file: Path | None,
    fatal: tuple[type[BaseException], ...] = (OnceflowError,),
) -> int:
    """Run a service in the foreground; returns the process exit code.

    Steps:
        1. Load the settings (``load``: file, environment, flags) and check that every listener
           they declare off loopback authenticates its clients (:mod:`onceflow.core.exposure`;
           ``ONCEFLOW_INSECURE=1`` allows it), and that every token file they name can be read; an
           :class:`OnceflowError` or a ``ValueError`` (a bad flag value) prints
           ``onceflow <command>: <error>`` and returns 2, before the service starts anything.
        2. Configure logging to stderr as the settings' ``log`` section says.
        3. Build the service and serve it until signalled
           (:func:`~onceflow.core.service.serve_until_signalled`). A :class:`ServiceStartFailed`
           prints its reason and returns its exit code; an error of the ``fatal`` kinds (an
           unreachable dependency) prints it and returns 2.
        4. A service that ended with a failure prints its reason; return its exit code.
    """
    # Step 1
    try:
        settings = load()
        refuse_unauthenticated(listeners_of(settings))
        check_token_files(settings)
    except (OnceflowError, ValueError) as exc:
        print(f"onceflow {command}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    # Step 2
    log: LoggingSettings = getattr(settings, "log", LoggingSettings())
    configure_logging(level=log.level, fmt=log.format)
    # Step 3
    try:
        status = serve_until_signalled(build(settings), ready_file)
    except ServiceStartFailed as exc:
        print(f"onceflow {command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except fatal as exc:
        print(f"onceflow {command}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    # Step 4
    if status.reason is not None:
        print(f"onceflow {command}: {status.reason}", file=sys.stderr)
    return status.code
