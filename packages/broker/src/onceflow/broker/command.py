"""``onceflow broker``: run the embedded broker in the foreground.

Also reachable as ``python -m onceflow.broker`` (what :class:`EmbeddedBroker` spawns). The process
logs ``broker.started listen=... advertised=... data_dir=...`` and writes the ready file (the
``ready`` file in the data dir unless ``--ready-file`` names another) once it accepts connections;
SIGTERM or SIGINT stop it gracefully. Flags override the config file and the environment.
Exit codes: 0 after SIGTERM/SIGINT, 1 when the data dir is locked by another broker or the address
cannot be bound, 2 for a bad configuration or a data dir that cannot be written.

``onceflow broker txns`` (also ``python -m onceflow.broker txns``) lists and aborts transactions of a
running broker (see :mod:`onceflow.broker.cli_txns`); ``onceflow broker users`` manages the SASL
users of a data dir (see :mod:`onceflow.broker.cli_users`).
"""

from __future__ import annotations

import argparse

from onceflow.broker import cli_txns, cli_users
from onceflow.core.service import ServiceCommand, flag

COMMAND = ServiceCommand(
    name="broker",
    help="run the embedded Kafka-protocol broker",
    description=__doc__ or "",
    service="onceflow.broker.service:broker_service",
    flags=(
        flag("--data-dir", setting="data_dir", metavar="DIR", help="where topics, logs and state live"),
        flag("--listen", setting="listen", metavar="HOST:PORT", help="listen address; port 0 picks a free port"),
        flag("--advertised", setting="advertised", metavar="HOST:PORT", help="address given to clients"),
        flag("--fsync", setting="fsync", choices=["always", "interval"], help="fsync policy of partition logs"),
        flag(
            "--auto-create-topics",
            setting="auto_create_topics",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="create unknown topics on Metadata/Produce requests",
        ),
        flag(
            "--default-partitions", setting="default_partitions", type=int, metavar="N", help="partitions of new topics"
        ),
        flag("--log-retention-ms", setting="log_retention_ms", type=int, metavar="N", help="default retention.ms"),
        flag(
            "--log-retention-bytes",
            setting="log_retention_bytes",
            type=int,
            metavar="N",
            help="default retention.bytes",
        ),
        flag("--log-level", setting="log.level", choices=["DEBUG", "INFO", "WARNING", "ERROR"]),
    ),
    commands=(cli_txns.register, cli_users.register),
)
