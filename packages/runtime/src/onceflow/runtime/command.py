"""``onceflow connect-worker``: run a connect worker until SIGTERM/SIGINT.

Run a Kafka-Connect-like worker. Settings come from --config (TOML) and ONCEFLOW_CONNECT__* environment
variables; connector files (JSON or properties) are created at start in standalone mode. Also reachable
as ``python -m onceflow.runtime``. Exit codes: 0 after SIGTERM/SIGINT, 2 for a bad configuration or an
unreachable Kafka cluster.
"""

from __future__ import annotations

from onceflow.core.service import ServiceCommand, flag

COMMAND = ServiceCommand(
    name="connect-worker",
    help="run a connect worker (standalone or distributed)",
    description=__doc__ or "",
    service="onceflow.runtime.service:ConnectWorkerService",
    config_file="services/connect-worker/worker.toml",
    flags=(
        flag(
            "connectors", setting="connectors", extend=True, nargs="*", help="connector config files (standalone mode)"
        ),
    ),
)
