"""``onceflow broker``: run the embedded broker in the foreground.

Also reachable as ``python -m onceflow.broker`` (what :class:`EmbeddedBroker` spawns). The process
logs ``broker.started listen=... advertised=... data_dir=...`` and writes the ready file (the
``ready`` file in the data dir unless ``--ready-file`` names another, see
:mod:`onceflow.broker.readiness`) once it accepts connections; SIGTERM or SIGINT stop it gracefully.
Exit codes: 0 after SIGTERM/SIGINT, 1 when the data dir is locked by another broker or the address
cannot be bound, 2 for a bad configuration or a data dir that cannot be written.

``onceflow broker txns`` (also ``python -m onceflow.broker txns``) lists and aborts transactions of a
running broker (see :mod:`onceflow.broker.cli_txns`); ``onceflow broker users`` manages the SASL
users of a data dir (see :mod:`onceflow.broker.cli_users`).
"""

from __future__ import annotations

import argparse
from typing import Any

from onceflow.broker import cli_txns, cli_users
from onceflow.core.service import add_service_arguments, run_service

_FLAG_SETTINGS = {
    "data_dir": "data_dir",
    "listen": "listen",
    "advertised": "advertised",
    "fsync": "fsync",
    "auto_create_topics": "auto_create_topics",
    "default_partitions": "default_partitions",
    "log_retention_ms": "log_retention_ms",
    "log_retention_bytes": "log_retention_bytes",
    "log_level": "log.level",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the broker's command-line flags to ``parser``; unset flags leave the config file in charge."""
    add_service_arguments(parser, "services/broker/broker.toml")
    parser.add_argument("--data-dir", metavar="DIR", help="where topics, logs and state live")
    parser.add_argument("--listen", metavar="HOST:PORT", help="listen address; port 0 picks a free port")
    parser.add_argument("--advertised", metavar="HOST:PORT", help="address given to clients")
    parser.add_argument("--fsync", choices=["always", "interval"], help="fsync policy of partition logs")
    parser.add_argument(
        "--auto-create-topics",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="create unknown topics on Metadata/Produce requests",
    )
    parser.add_argument("--default-partitions", type=int, metavar="N", help="partitions of new topics")
    parser.add_argument("--log-retention-ms", type=int, metavar="N", help="default retention.ms")
    parser.add_argument("--log-retention-bytes", type=int, metavar="N", help="default retention.bytes")
    parser.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Entry point of the ``onceflow.cli`` group: adds the ``broker`` subcommand."""
    parser = subparsers.add_parser(
        "broker",
        help="run the embedded Kafka-protocol broker",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_commands(parser)


def _add_commands(parser: argparse.ArgumentParser) -> None:
    """The broker's flags (running it is the default) and its admin subcommands."""
    add_arguments(parser)
    parser.set_defaults(func=run)
    commands = parser.add_subparsers(title="broker commands", metavar="COMMAND")
    cli_txns.register(commands)
    cli_users.register(commands)


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for attribute, setting in _FLAG_SETTINGS.items():
        value = getattr(args, attribute, None)
        if value is None:
            continue
        node = overrides
        *parents, leaf = setting.split(".")
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = value
    return overrides


def run(args: argparse.Namespace) -> int:
    """Load the config (file, environment, flags), then serve until SIGTERM/SIGINT. Returns the exit code."""
    from onceflow.broker.config import BrokerConfig
    from onceflow.broker.log_escaping import escape_log_lines
    from onceflow.broker.process import BrokerService
    from onceflow.core.settings import load_settings

    def load() -> BrokerConfig:
        merged = load_settings(BrokerConfig, args.config).model_dump()
        for key, value in _overrides(args).items():
            if isinstance(value, dict):
                merged[key] = {**merged.get(key, {}), **value}
            else:
                merged[key] = value
        return BrokerConfig.model_validate(merged)  # a bad flag value is a ValueError naming it

    def build(config: BrokerConfig) -> BrokerService:
        escape_log_lines()  # client-chosen ids must not forge log lines
        return BrokerService(config)

    return run_service("broker", load, build, ready_file=args.ready_file)


def main(argv: list[str] | None = None) -> int:
    """``python -m onceflow.broker`` entry point."""
    parser = argparse.ArgumentParser(prog="python -m onceflow.broker", description=__doc__)
    _add_commands(parser)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code
