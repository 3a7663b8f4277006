"""``onceflow participant``: run a two-phase-commit sink participant server.

Also reachable as ``python -m onceflow.sinks``. Configuration comes from ``--config FILE`` (see
services/participant/participant.toml) and ``ONCEFLOW_PARTICIPANT__*`` environment variables. Prepared
transactions left by a previous run are resolved with the coordinator before any new work is taken.
Exit codes: 0 after SIGTERM/SIGINT (also while recovery still waits for the coordinator), 2 for a bad
configuration or a sink that cannot be opened.
"""

from __future__ import annotations

from onceflow.core.service import ServiceCommand

COMMAND = ServiceCommand(
    name="participant",
    help="run a 2PC sink participant server (Kafka topic, SQLite, PostgreSQL sinks)",
    description=__doc__ or "",
    service="onceflow.sinks.service:participant_service",
)
