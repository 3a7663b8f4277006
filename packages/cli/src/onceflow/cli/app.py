"""The ``onceflow`` command.

Each service adds its own subcommand through the ``onceflow.cli`` entry-point group: an entry
point names a function ``register(subparsers)`` that adds a sub-parser and sets ``func`` (taking
the parsed :class:`argparse.Namespace`, returning an exit code) with ``set_defaults``. So the CLI
does not depend on the packages it runs, and a package that is not installed has no subcommand.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from onceflow.cli.version import add_version_command
from onceflow.core.errors import OnceflowError
from onceflow.core.logging import configure_logging
from onceflow.core.plugins import CALLABLE, PluginError, load_group

ENTRY_POINT_GROUP = "onceflow.cli"


def build_parser() -> argparse.ArgumentParser:
    """The full parser: global options, built-in commands, then every plugin's subcommand."""
    parser = argparse.ArgumentParser(
        prog="onceflow",
        description="onceflow: end-to-end exactly-once streaming (log producer -> Kafka -> Spark -> sinks).",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument("--log-format", default="kv", choices=["kv", "json"], help="key=value lines or JSON")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    add_version_command(subparsers)
    for plugin in load_group(ENTRY_POINT_GROUP, kind=CALLABLE, on_error=_unavailable):
        plugin.target(subparsers)
    return parser


def _unavailable(error: PluginError) -> None:
    """A broken plugin must not take the other commands down with it; say which one and why."""
    print(f"onceflow: warning: command {error.name!r} is unavailable: {error}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    # A subcommand may define its own --log-level (default None: "leave it to the config"), which
    # replaces the global option's value in the namespace; fall back to the global defaults then.
    configure_logging(args.log_level or "INFO", args.log_format or "kv")
    try:
        code: int = func(args)
    except OnceflowError as exc:
        print(f"onceflow: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_went_away()
    return code


def _reader_went_away() -> int:
    """stdout's reader closed the pipe (``onceflow ... | head``): stop quietly, as ``cat`` does.

    Python would print a traceback when it flushes stdout at exit; point stdout at /dev/null first.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141  # 128 + SIGPIPE, what a shell reports for a writer killed by SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
