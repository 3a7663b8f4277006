"""``onceflow broker``: run the embedded broker in the foreground.

Also reachable as ``python -m onceflow.broker`` (what :class:`EmbeddedBroker` spawns). The process
logs ``broker.started listen=... advertised=... data_dir=...``, writes the ``ready`` file in the data
dir (see :mod:`onceflow.broker.readiness`) and prints ``ONCEFLOW_BROKER_READY port=N`` on stdout
once it accepts connections; SIGTERM or SIGINT stop it gracefully.

``onceflow broker txns`` (also ``python -m onceflow.broker txns``) lists and aborts transactions of a
running broker (see :mod:`onceflow.broker.cli_txns`); ``onceflow broker users`` manages the SASL
users of a data dir (see :mod:`onceflow.broker.cli_users`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from onceflow.broker import cli_txns, cli_users
from onceflow.core.errors import InvalidConfig

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
    parser.add_argument("--config", metavar="FILE", help="TOML config file (see services/broker/broker.toml)")
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
    """Load the config, then serve until SIGTERM/SIGINT. Returns the process exit code."""
    from onceflow.broker.config import BrokerConfig
    from onceflow.broker.log_escaping import escape_log_lines
    from onceflow.broker.process import serve_forever
    from onceflow.core.logging import configure_logging
    from onceflow.core.settings import load_settings

    try:
        base = load_settings(BrokerConfig, args.config)
        merged = base.model_dump()
        for key, value in _overrides(args).items():
            if isinstance(value, dict):
                merged[key] = {**merged.get(key, {}), **value}
            else:
                merged[key] = value
        config = BrokerConfig.model_validate(merged)
    except InvalidConfig as exc:
        print(f"onceflow broker: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # pydantic ValidationError of a command-line value
        print(f"onceflow broker: invalid command-line value: {exc}", file=sys.stderr)
        return 2
    configure_logging(level=config.log.level, fmt=config.log.format, stream=sys.stderr)
    escape_log_lines()  # client-chosen ids must not forge log lines
    return serve_forever(config)


def main(argv: list[str] | None = None) -> int:
    """``python -m onceflow.broker`` entry point."""
    parser = argparse.ArgumentParser(prog="python -m onceflow.broker", description=__doc__)
    _add_commands(parser)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code
