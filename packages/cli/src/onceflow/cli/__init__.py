"""onceflow.cli: the ``onceflow`` command; services plug in their subcommands by entry point."""

from onceflow.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
